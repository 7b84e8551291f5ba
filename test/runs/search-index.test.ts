/**
 * The store's full-text rule (evaluate.ts rule 1): a run's words are indexed when its status is
 * an end, whether the update sets the status or keeps the one the run had, and never before.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/open.ts';
import { nowIso, newId } from '../../src/db/ids.ts';
import { parseLucene } from '../../src/query/lucene/index.ts';
import { compileRunQuery, fullTextWords } from '../../src/runs/lucene-sql/index.ts';
import { sql } from 'kysely';
import { insertRun, updateRun } from '../../src/runs/store.ts';
import { findRuns, pagePlan, whereOf } from '../../src/runs/search-store.ts';
import type { RunRow } from '../../src/runs/model.ts';
import { POSTGRES_ONLY, TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCOPE = { account: 'acc', project: 'prj' };

/** A run of SCOPE whose prompt is `words`. */
const runRow = (status: string, words: string, extra: Partial<RunRow> = {}): RunRow =>
  ({
    id: newId(),
    account_id: SCOPE.account,
    project_id: SCOPE.project,
    interaction_id: 'ix',
    environment_id: null,
    model_id: 'echo',
    status,
    parent_id: null,
    finish_reason: null,
    execution_time: null,
    token_prompt: null,
    token_result: null,
    token_total: null,
    tags: [],
    created_at: nowIso(),
    updated_at: nowIso(),
    executor: null,
    doc: {
      result: [],
      parameters: {},
      prompt: [{ role: 'user', content: words }],
      config: {},
      source: {},
      interaction: { id: 'ix', name: 'Ix' },
    },
    ...extra,
  }) as unknown as RunRow;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: full text is written when a run ends`, () => {
    const cleanups: Array<() => Promise<void> | void> = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c();
    });

    it('indexes words on an update that ends a run or keeps an ended one, not on one that keeps it running', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'orrery-fts-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const pgdb = dialect === 'postgres' ? await createPgDatabase() : undefined;
      if (pgdb) cleanups.push(() => pgdb.drop());
      const { db, dialect: d } = await openDatabase({ dataDir: dir, databaseUrl: pgdb?.url });
      cleanups.push(() => db.destroy());
      const find = async (q: string) =>
        (
          await findRuns(db, d, whereOf(d, SCOPE, {}, compileRunQuery(parseLucene(q), { dialect: d.name })), 100, 0)
        ).map((r) => r.id);

      const running = runRow('processing', 'alpha');
      const ended = runRow('completed', 'beta');
      await insertRun(db, d, running, []);
      await insertRun(db, d, ended, []);
      assert.deepEqual(await find('alpha'), [], 'inserted running: no text');
      assert.deepEqual(await find('beta'), [ended.id], 'inserted ended: text');

      // A document change that keeps the status (no status in the patch): the stored status decides.
      await updateRun(db, d, running.id, {
        doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'gamma' }] } as never,
      });
      await updateRun(db, d, ended.id, {
        doc: { ...(ended.doc as object), prompt: [{ role: 'user', content: 'delta' }] } as never,
      });
      assert.deepEqual(await find('gamma'), [], 'still running: no text');
      assert.deepEqual(await find('delta'), [ended.id], 'still ended: the new text');
      assert.deepEqual(await find('beta'), [], 'the old text is gone');

      // The update that ends the run writes its words; a guarded one that finds the run moved on writes nothing.
      assert.equal(
        await updateRun(
          db,
          d,
          running.id,
          {
            status: 'failed',
            doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'epsilon' }] } as never,
          },
          'created',
        ),
        false,
      );
      assert.deepEqual(await find('epsilon'), []);
      assert.equal(
        await updateRun(db, d, running.id, {
          status: 'completed',
          doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'zeta' }] } as never,
        }),
        true,
      );
      assert.deepEqual(await find('zeta'), [running.id]);
    });
  });
}

describe('postgres: pages steered by the statistics of the tsvector', POSTGRES_ONLY, () => {
  it('tests a common phrase run by run (COALESCE, no GIN) and a rare one through the index, with the same answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-fts-'));
    const pgdb = await createPgDatabase();
    const { db, dialect: d } = await openDatabase({ dataDir: dir, databaseUrl: pgdb.url });
    try {
      const made: RunRow[] = [];
      for (let i = 0; i < 300; i++) {
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        const row = runRow(
          'completed',
          `common words everywhere ${i % 50 === 0 ? 'rare needle' : 'plain hay'} number ${i}`,
          { execution_time: i, created_at: at, updated_at: at },
        );
        await insertRun(db, d, row, []);
        made.push(row);
      }
      await sql`ANALYZE runs`.execute(db);
      const page = async (q: string) => {
        const node = parseLucene(q);
        const plan = await pagePlan(db, d, fullTextWords(node), 100);
        const where = whereOf(d, SCOPE, {}, compileRunQuery(node, { dialect: d.name, plan }), plan);
        const text = sql`SELECT 1 FROM runs WHERE ${where}`.compile(db).sql;
        return {
          ids: (await findRuns(db, d, where, 20, 0)).map((r) => r.id),
          walked: /COALESCE\(runs\.search_tsv @@/.test(text),
        };
      };
      const newest = (test: (r: RunRow) => boolean) =>
        made
          .filter(test)
          .reverse()
          .slice(0, 20)
          .map((r) => r.id);
      const common = await page('"common words" AND execution_time:<250');
      assert.equal(common.walked, true, 'a common phrase is walked');
      assert.deepEqual(
        common.ids,
        newest((r) => (r.execution_time as number) < 250),
      );
      const rare = await page('"rare needle"');
      assert.equal(rare.walked, false, 'a rare phrase goes through GIN');
      assert.deepEqual(
        rare.ids,
        newest((r) => (r.execution_time as number) % 50 === 0),
      );
    } finally {
      await db.destroy();
      await pgdb.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
