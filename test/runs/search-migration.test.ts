/**
 * Migration 0003 on a database that already holds runs: it fills their search data with its own
 * frozen copy of the rules, and that data must equal what the store writes for a new run today,
 * so old and new runs are found alike.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { OrreryMigrations } from '../../src/db/migrations.ts';
import { postgresDialect, sqliteDialect, type OrreryDialect } from '../../src/db/dialect.ts';
import type { Database } from '../../src/db/schema.ts';
import { compileMatcher, parseLucene } from '../../src/query/lucene/index.ts';
import { compileRunQuery, runSearchDoc, tsvectorLiteral } from '../../src/runs/lucene-sql/index.ts';
import { encodeRun } from '../../src/runs/store.ts';
import { findRuns, whereOf } from '../../src/runs/search-store.ts';
import { TEST_DIALECTS, createPgDatabase, testPgPool } from '../support/server.ts';
import { byRecency, docOfRow, generateRuns, rng } from './search-fixtures.ts';

const SCOPE = { account: { id: 'acc', name: 'Account' }, project: { id: 'prj', name: 'Project' } };

async function open(
  dialect: 'sqlite' | 'postgres',
): Promise<{ db: Kysely<Database>; d: OrreryDialect; close: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-mig-'));
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dir, 'o.db')) }) });
    return {
      db,
      d: sqliteDialect,
      close: async () => {
        await db.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const pgdb = await createPgDatabase();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: testPgPool(pgdb.url, 2) }) });
  return {
    db,
    d: postgresDialect,
    close: async () => {
      await db.destroy();
      await pgdb.drop();
    },
  };
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: migration 0003 indexes the runs already stored`, () => {
    let close: (() => Promise<void>) | undefined;
    after(() => close?.());

    it('backfills search data equal to what the store writes, and finds old runs', async () => {
      const opened = await open(dialect);
      close = opened.close;
      const { db, d } = opened;
      const migrator = new Migrator({ db, provider: new OrreryMigrations(d.name) });
      const before = await migrator.migrateTo('0002_objects');
      assert.equal(before.error, undefined, String(before.error));

      const r = rng(99);
      const runs = generateRuns(r, 400, SCOPE);
      await db.transaction().execute(async (trx) => {
        for (const { row, tags } of runs) {
          await trx
            .insertInto('runs')
            .values(encodeRun(d, row) as never)
            .execute();
          for (const tag of tags) await trx.insertInto('run_tags').values({ run_id: row.id, tag }).execute();
        }
      });
      const latest = await migrator.migrateToLatest();
      assert.equal(latest.error, undefined, String(latest.error));

      const stored = await sql<{
        id: string;
        search_fields: unknown;
        tsv: string | null;
        interaction_name: string | null;
        environment_name: string | null;
      }>`
        SELECT id, search_fields, ${d.name === 'postgres' ? sql`search_tsv::text` : sql`NULL`} AS tsv, interaction_name, environment_name FROM runs`.execute(
        db,
      );
      const byId = new Map(stored.rows.map((x) => [x.id, x]));
      const back = await db.selectFrom('runs').select(['id', 'doc']).execute();
      const docs0 = new Map(back.map((x) => [x.id, d.fromJson<Record<string, unknown>>(x.doc)]));
      for (const { row } of runs) {
        // The document as stored (jsonb reorders keys): what the store indexes today, too.
        const doc = docs0.get(row.id)!;
        const s = runSearchDoc(doc);
        const got = byId.get(row.id)!;
        assert.deepEqual(d.fromJson(got.search_fields), JSON.parse(JSON.stringify(s.fields)), row.id);
        assert.equal(got.interaction_name, (doc.interaction as { name: string }).name);
        assert.equal(got.environment_name, (doc.environment as { name: string } | null)?.name ?? null);
        if (d.name === 'postgres') {
          // Full text only for runs that ended (the store writes it with a run's final update).
          const ended = row.status === 'completed' || row.status === 'failed';
          const want = await sql<{
            t: string;
          }>`SELECT CAST(${ended ? tsvectorLiteral(s) : ''} AS tsvector)::text AS t`.execute(db);
          assert.equal(got.tsv, want.rows[0].t, row.id);
        }
      }

      const rows = runs.map((x) => ({ ...x.row, doc: docs0.get(x.row.id) })).sort(byRecency);
      const docs = rows.map(docOfRow);
      for (const query of [
        'hello',
        '"hello world"',
        'hel*',
        'h?llo',
        'result:report',
        'prompt:café',
        'parameters.topic:report',
        'parameters.customer.id:c-1',
        'config.model:gpt*',
        'interaction:Summarize',
        'environment:local',
        'tags:alpha',
        'NOT tags:*',
      ]) {
        const where = whereOf(
          d,
          { account: SCOPE.account.id, project: SCOPE.project.id },
          {},
          compileRunQuery(parseLucene(query), { dialect: d.name }),
        );
        const got = (await findRuns(db, d, where, 1000, 0)).map((x) => x.id);
        const test = compileMatcher(parseLucene(query));
        assert.deepEqual(
          got,
          rows.filter((_, i) => test(docs[i])).map((x) => x.id),
          query,
        );
      }
    });
  });
}
