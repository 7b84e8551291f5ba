/**
 * The store's full-text rule (evaluate.ts rule 1): a run's words are indexed when its status is
 * an end, whether the update sets the status or keeps the one the run had, and never before.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/open.ts';
import { nowIso, newId } from '../../src/db/ids.ts';
import { parseLucene } from '../../src/query/lucene/index.ts';
import { compileRunQuery } from '../../src/query/lucene-sql/index.ts';
import { insertRun, updateRun } from '../../src/runs/store.ts';
import { findRuns, whereOf } from '../../src/runs/search-store.ts';
import type { RunRow } from '../../src/runs/model.ts';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: full text is written when a run ends`, () => {
    const cleanups: Array<() => Promise<void> | void> = [];
    after(async () => { for (const c of cleanups.reverse()) await c(); });

    it('indexes words on an update that ends a run or keeps an ended one, not on one that keeps it running', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'orrery-fts-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const pgdb = dialect === 'postgres' ? await createPgDatabase() : undefined;
      if (pgdb) cleanups.push(() => pgdb.drop());
      const { db, dialect: d } = await openDatabase({ dataDir: dir, databaseUrl: pgdb?.url });
      cleanups.push(() => db.destroy());
      const account = (await db.selectFrom('accounts').select(['id', 'name']).executeTakeFirst()) ?? { id: 'acc', name: 'Account' };
      const scope = { account: account.id, project: 'prj' };
      const row = (status: string, words: string): RunRow => ({
        id: newId(), account_id: scope.account, project_id: scope.project, interaction_id: 'ix', environment_id: null, model_id: 'echo', status,
        parent_id: null, finish_reason: null, execution_time: null, token_prompt: null, token_result: null, token_total: null, tags: [],
        created_at: nowIso(), updated_at: nowIso(), executor: null,
        doc: { result: [], parameters: {}, prompt: [{ role: 'user', content: words }], config: {}, source: {}, interaction: { id: 'ix', name: 'Ix' } },
      } as unknown as RunRow);
      const find = async (q: string) => (await findRuns(db, d, whereOf(d, scope, {}, compileRunQuery(parseLucene(q), { dialect: d.name })), 100, 0)).map((r) => r.id);

      const running = row('processing', 'alpha');
      const ended = row('completed', 'beta');
      await insertRun(db, d, running, []);
      await insertRun(db, d, ended, []);
      assert.deepEqual(await find('alpha'), [], 'inserted running: no text');
      assert.deepEqual(await find('beta'), [ended.id], 'inserted ended: text');

      // A document change that keeps the status (no status in the patch): the stored status decides.
      await updateRun(db, d, running.id, { doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'gamma' }] } as never });
      await updateRun(db, d, ended.id, { doc: { ...(ended.doc as object), prompt: [{ role: 'user', content: 'delta' }] } as never });
      assert.deepEqual(await find('gamma'), [], 'still running: no text');
      assert.deepEqual(await find('delta'), [ended.id], 'still ended: the new text');
      assert.deepEqual(await find('beta'), [], 'the old text is gone');

      // The update that ends the run writes its words; a guarded one that finds the run moved on writes nothing.
      assert.equal(await updateRun(db, d, running.id, { status: 'failed', doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'epsilon' }] } as never }, 'created'), false);
      assert.deepEqual(await find('epsilon'), []);
      assert.equal(await updateRun(db, d, running.id, { status: 'completed', doc: { ...(running.doc as object), prompt: [{ role: 'user', content: 'zeta' }] } as never }), true);
      assert.deepEqual(await find('zeta'), [running.id]);
    });
  });
}
