/**
 * The search fields a run's insert computed are kept on its document (runs/search-index.ts,
 * FIELDS_SLOT), with the run whose row holds them: the update that ends that run leaves its
 * `search_fields` as they are; an update of another run, or with other objects, writes its own.
 * A copy of the document whose parameters, config or source are other objects (a virtual run's
 * child: its own environment and model) must get fields, and their JSON, of its own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { postgresDialect, sqliteDialect } from '../../src/db/dialect.ts';
import { newId, nowIso } from '../../src/db/ids.ts';
import { prepareRunInsert, prepareRunUpdate } from '../../src/runs/store.ts';
import type { RunRow } from '../../src/runs/model.ts';

const rowOf = (doc: Record<string, unknown>): RunRow =>
  ({
    id: newId(),
    account_id: 'a',
    project_id: 'p',
    interaction_id: 'ix',
    environment_id: 'env',
    model_id: 'm',
    status: 'processing',
    parent_id: null,
    finish_reason: null,
    execution_time: null,
    token_prompt: null,
    token_result: null,
    token_total: null,
    tags: [],
    created_at: nowIso(),
    updated_at: nowIso(),
    executor: 'me',
    doc,
  }) as unknown as RunRow;

/** The `search_fields` column as written: JSON text on both dialects (the PostgreSQL driver parses it only when read back). */
const parsed = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
const fieldsOfInsert = (d: typeof sqliteDialect, row: RunRow) =>
  parsed(
    (prepareRunInsert(d, row, []) as { insert: { rows: Array<Record<string, unknown>> } }).insert.rows[0].search_fields,
  );
const setOfUpdate = (d: typeof sqliteDialect, id: string, doc: Record<string, unknown>) =>
  (prepareRunUpdate(d, id, { status: 'completed', doc } as never) as { update: { set: Record<string, unknown> } })
    .update.set;
const fieldsOfUpdate = (d: typeof sqliteDialect, id: string, doc: Record<string, unknown>) =>
  parsed(setOfUpdate(d, id, doc).search_fields);

for (const d of [sqliteDialect, postgresDialect]) {
  describe(`${d.name}: search fields kept on a run's document`, () => {
    it("are the insert's at the run's end, and a copy with other objects gets its own", () => {
      const doc = {
        result: [],
        parameters: { topic: 'orbits' },
        prompt: [],
        config: { model: 'first-model' },
        source: { type: 'api' },
      };
      const row = rowOf(doc);
      const first = fieldsOfInsert(d, row);
      assert.ok(JSON.stringify(first).includes('first-model'));
      // The end of the same run: a spread of its document, the same objects, whose fields its row holds.
      const end = setOfUpdate(d, row.id, { ...doc, result: [{ type: 'text', value: 'done' }] });
      assert.equal(end.search_fields, undefined, 'the row holds these fields already');
      assert.ok(typeof end.doc === 'string' && end.doc.includes('done'));
      // The same document written to another run, or this run's with other parameters: fields of their own.
      assert.deepEqual(fieldsOfUpdate(d, newId(), { ...doc, result: [] }), first);
      assert.ok(
        JSON.stringify(fieldsOfUpdate(d, row.id, { ...doc, parameters: { topic: 'tides' } })).includes('tides'),
      );
      // A child: the parent's document spread, with a config of its own.
      const child = { ...doc, config: { model: 'second-model' } };
      const second = fieldsOfInsert(d, rowOf(child));
      assert.ok(JSON.stringify(second).includes('second-model'), "the child's own config");
      assert.ok(!JSON.stringify(second).includes('first-model'));
      // And its end, a spread of the child's document.
      assert.deepEqual(fieldsOfUpdate(d, newId(), { ...child, result: [] }), second);
      // Parameters and source too.
      const other = { ...doc, parameters: { topic: 'comets' }, source: { type: 'cli' } };
      const third = JSON.stringify(fieldsOfInsert(d, rowOf(other)));
      assert.ok(third.includes('comets') && third.includes('cli') && !third.includes('orbits'));
    });
  });
}
