/**
 * SQLite's query plans for the reads of runs, now that the read indexes leave out the runs in
 * flight (migration 0023, runs/run-arms.ts): SQLite walks a partial index only for a statement that
 * holds its condition, and falls back to another index or to the whole table without a word. The
 * answers stay right either way (test/runs/in-flight-reads.test.ts); this keeps them fast. Each read
 * is sent as the service sends it, its SQL caught on the way, and EXPLAIN QUERY PLAN must show one
 * of the read indexes and no scan of the table. Like the server, the database has no statistics
 * (no ANALYZE), so the planner picks what it picks in use; issue 4's million-run figures
 * (bench/README.md) are the measure of the same plans at size.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { seedEcho, startTestServer, TEST_DIALECTS, type TestServer } from '../support/server.ts';
import { sqliteDialect } from '../../src/db/dialect.ts';
import type { Database } from '../../src/db/schema.ts';
import { RunSearch } from '../../src/runs/search.ts';
import { RunFinder } from '../../src/runs/find.ts';
import * as analytics from '../../src/runs/aggregates.ts';

/** The partial indexes of migration 0023. */
const READ_INDEXES =
  /\b(runs_recent_cover|runs_search_cover|runs_model|runs_interaction|runs_environment|runs_analytics)\b/;

if (TEST_DIALECTS.includes('sqlite')) {
  describe('sqlite: the reads of runs walk the read indexes', () => {
    let srv: TestServer;
    let handle: SQLite.Database;
    let db: Kysely<Database>;
    const sent: { sql: string; parameters: readonly unknown[] }[] = [];
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    let runId: string;
    let scope: { account: string; project: string };

    /** The plan lines of every statement `read` sends. */
    const plansOf = async (read: () => Promise<unknown>): Promise<string[][]> => {
      sent.length = 0;
      await read();
      assert.ok(sent.length > 0, 'the read sent SQL');
      return sent.map((q) =>
        (handle.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.parameters as unknown[])) as { detail: string }[]).map(
          (r) => r.detail,
        ),
      );
    };
    /** Every statement that reads the runs table walks a read index, and none scans the table. */
    const assertIndexed = (name: string, plans: string[][]) => {
      for (const plan of plans.filter((lines) => lines.some((line) => /^(SEARCH|SCAN) runs\b/.test(line)))) {
        assert.ok(
          plan.some((line) => READ_INDEXES.test(line)),
          `${name}: no read index in\n${plan.join('\n')}`,
        );
        assert.ok(
          !plan.some((line) => /^SCAN runs\b(?! USING)/.test(line)),
          `${name}: scans the table\n${plan.join('\n')}`,
        );
      }
    };

    before(async () => {
      srv = await startTestServer('sqlite');
      seeded = await seedEcho(srv);
      for (let i = 0; i < 3; i++) {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: `run ${i}` },
          tags: ['t'],
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        runId = r.body.id;
      }
      const { account, project } = srv.orrery.bootstrap;
      scope = { account: account.id, project: project.id };
      handle = new SQLite(srv.orrery.database.file!, { readonly: true });
      // Heavy reads call the server's per-row budget function (db/sqlite-handle.ts); here it passes.
      handle.function('orrery_read', { deterministic: false, directOnly: true }, (_bytes: unknown) => 1);
      db = new Kysely<Database>({
        dialect: new SqliteDialect({ database: handle }),
        log: (e) => void (e.level === 'query' && sent.push({ sql: e.query.sql, parameters: e.query.parameters })),
      });
    });
    after(async () => {
      await db?.destroy();
      await srv?.close();
    });

    it('lists, searches, counts and facets', async () => {
      const search = new RunSearch(db, sqliteDialect);
      const reads: [string, () => Promise<unknown>][] = [
        ['list', () => search.list(scope, {})],
        ['list page', () => search.list(scope, { limit: '10', offset: '20' })],
        ['list by model and status', () => search.list(scope, { model: 'echo', status: 'completed' })],
        ['list by interaction', () => search.list(scope, { interaction: seeded.interaction.id })],
        ['list by environment and tag', () => search.list(scope, { environment: seeded.env.id, tag: 't' })],
        [
          'search',
          () => search.search(scope, { query: 'execution_time:[0 TO 5000] AND (status:failed OR modelId:echo)' }),
        ],
        ['search with words', () => search.search(scope, { query: '"run 1" AND status:completed' })],
        [
          'count and facets',
          () =>
            search.search(scope, {
              query: 'status:completed',
              onlyMeta: true,
              facets: { s: { type: 'string', path: 'status' }, m: { type: 'string', path: 'modelId' } },
            }),
        ],
        ['count', () => search.search(scope, { facets: {}, onlyMeta: true })],
        ['facets', () => search.facets(scope, { facets: [{ name: 'status', field: 'status' }] })],
        ['find', () => new RunFinder(db, sqliteDialect).find(scope, { query: { status: 'completed' } })],
      ];
      for (const [name, read] of reads) assertIndexed(name, await plansOf(read));
    });

    it('aggregates the analytics', async () => {
      const d = sqliteDialect;
      const reads: [string, () => Promise<unknown>][] = [
        ['status counts', () => analytics.statusCounts(db, d, { scope: { project: scope.project } })],
        [
          'time buckets',
          () => analytics.bucketCounts(db, d, { scope: { project: scope.project }, from: '2026-01-01' }, 'day'),
        ],
        ['token sums', () => analytics.tokenSums(db, d, { scope: { project: scope.project } })],
        [
          'cost of the account',
          () => analytics.costRows(db, d, { scope: { projects: [scope.project] } }, 'model_id', 'day', true),
        ],
        ['providers', () => analytics.providersOf(db, d, { project: scope.project }, [seeded.env.id])],
      ];
      for (const [name, read] of reads) assertIndexed(name, await plansOf(read));
      // One run and its children: by id (the children through runs_parent), never along the project.
      for (const scoped of [{ project: scope.project }, { projects: [scope.project] }]) {
        const one = (
          await plansOf(() => analytics.costRows(db, d, { scope: scoped, run: runId }, 'model_id', null, false))
        ).flat();
        assert.ok(
          one.some((l) => /runs_parent/.test(l)),
          one.join('\n'),
        );
        assert.ok(
          !one.some((l) => /^(SCAN runs|SEARCH runs USING (COVERING )?INDEX runs_\w+ \(project_id=\?\))$/.test(l)),
          one.join('\n'),
        );
      }
    });

    it('keys every index of runs in ascending order, and walks the newest-first one backwards without sorting', async () => {
      // A descending key puts each new run at a leaf's left-hand edge: more pages written per commit (migration 0024).
      const indexes = handle
        .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql IS NOT NULL`)
        .all() as { name: string; sql: string }[];
      assert.ok(indexes.length >= 10, indexes.map((x) => x.name).join(' '));
      for (const { name, sql } of indexes) assert.doesNotMatch(sql, /\bdesc\b/i, name);
      const [page] = await plansOf(() => new RunSearch(db, sqliteDialect).list(scope, { limit: '10' }));
      const walk = page.findIndex((l) => /USING COVERING INDEX runs_recent_cover \(project_id=\?\)$/.test(l));
      assert.ok(walk >= 0, page.join('\n'));
      // The arm that walks the index sorts nothing: the next line is its scan, not a temporary B-tree.
      assert.doesNotMatch(page[walk + 1], /TEMP B-TREE/, page.join('\n'));
    });
  });
}
