/**
 * The databases the find tests run on: SQLite in memory, and PostgreSQL when the run includes it
 * (`npm test` starts a throwaway cluster; without ORRERY_TEST_PG_URL these fail), in a fresh schema
 * dropped afterwards, holding the documents of find-documents.ts.
 */
import SQLite from 'better-sqlite3';
import pg from 'pg';
import {
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  type ColumnDefinitionBuilder,
  type Expression,
  type SqlBool,
} from 'kysely';
import { jsonSql, type JsonSql } from '../../src/db/json-sql.ts';
import { compileFind } from '../../src/query/find/index.ts';
import { type J, type Q, type Row, DOCS } from './find-documents.ts';
import { FIELD_LIST, resolve, isObj } from './find-evaluator.ts';

type Dialect = 'sqlite' | 'postgres';
const PG_URL = process.env.ORRERY_TEST_PG_URL;
const WANTED = (process.env.ORRERY_TEST_DIALECTS ?? 'sqlite,postgres').split(',').map((d) => d.trim());
// PostgreSQL whenever the run includes it: without ORRERY_TEST_PG_URL its tests fail, not skip.
export const DIALECTS = (['sqlite', 'postgres'] as const).filter((d) => WANTED.includes(d));

export interface Harness {
  json: JsonSql;
  db: Kysely<any>;
  table: string;
  close(): Promise<void>;
}

const jsonCol = (v: J | undefined) => (v === undefined ? null : JSON.stringify(v));
const toRow = (d: Row) => ({
  ...d,
  tags: jsonCol(d.tags),
  properties: jsonCol(d.properties),
  metadata: jsonCol(d.metadata),
});

export async function openHarness(dialect: Dialect): Promise<Harness> {
  if (dialect === 'sqlite') {
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) });
    await db.schema
      .createTable('docs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text')
      .addColumn('status', 'text')
      .addColumn('n', 'real')
      .addColumn('tags', 'text')
      .addColumn('properties', 'text')
      .addColumn('metadata', 'text')
      .execute();
    await db.insertInto('docs').values(DOCS.map(toRow)).execute();
    return { json: jsonSql('sqlite'), db, table: 'docs', close: () => db.destroy() };
  }
  if (!PG_URL) throw new Error('ORRERY_TEST_PG_URL is not set: run the tests with `npm test`, which starts PostgreSQL');
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  pool.on('error', () => {});
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  const schema = `find_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await db.schema.createSchema(schema).execute();
  // Production databases rarely use the C locale: give the text columns a linguistic collation when
  // the server has ICU, so that code-point order must come from the compiled SQL, not the cluster.
  const icu = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM pg_collation WHERE collname = 'und-x-icu'`.execute(db);
  const text = (c: ColumnDefinitionBuilder) => (icu.rows[0].n ? c.modifyEnd(sql`COLLATE "und-x-icu"`) : c);
  await db.schema
    .createTable(`${schema}.docs`)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', text)
    .addColumn('status', 'text', text)
    .addColumn('n', 'double precision')
    .addColumn('tags', 'jsonb')
    .addColumn('properties', 'jsonb')
    .addColumn('metadata', 'jsonb')
    .execute();
  await db.insertInto(`${schema}.docs`).values(DOCS.map(toRow)).execute();
  return {
    json: jsonSql('postgres'),
    db,
    table: `${schema}.docs`,
    close: async () => {
      try {
        await db.schema.dropSchema(schema).cascade().execute();
      } finally {
        await db.destroy();
      }
    },
  };
}

export const where = (h: Harness, q: Q): Expression<SqlBool> => compileFind(q, resolve, h.json, FIELD_LIST);
export const query = (h: Harness, q: Q) => h.db.selectFrom(`${h.table} as d`).select('d.id').where(where(h, q));
export const ids = async (h: Harness, q: Q): Promise<string[]> =>
  (await query(h, q).execute()).map((r) => r.id as string).sort();

/** Every string a query carries (keys and values), for "never in the SQL text" checks. */
export const stringsOf = (v: unknown): string[] =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v)
      ? v.flatMap(stringsOf)
      : isObj(v)
        ? Object.entries(v).flatMap(([k, x]) => [k, ...stringsOf(x)])
        : [];
