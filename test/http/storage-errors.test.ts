import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { POSTGRES_ONLY, TEST_DIALECTS, startTestServer } from '../support/server.ts';
import { PoolBusyError, classifyStorageError } from '../../src/db/storage-errors.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('storage errors are classified by their codes', () => {
  it('an unreachable database, a busy pool, a full disk, anything else', () => {
    for (const e of [
      withCode('ECONNREFUSED'),
      withCode('57P01'),
      withCode('08006'),
      withCode('57P03'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
      new AggregateError([withCode('ECONNREFUSED')]),
    ]) {
      assert.equal(classifyStorageError(e), 'unavailable', String(e));
    }
    for (const e of [
      withCode('ENOSPC'),
      withCode('SQLITE_FULL'),
      withCode('53100'),
      Object.assign(new Error('wrapped'), { cause: withCode('ENOSPC') }),
    ]) {
      assert.equal(classifyStorageError(e), 'full', String(e));
    }
    // A pool that stayed full is load, not an unreachable database, though pg-pool's message is the same.
    const busy = new PoolBusyError(10, 10_000, { cause: new Error('timeout exceeded when trying to connect') });
    assert.equal(classifyStorageError(busy), 'busy');
    assert.equal(classifyStorageError(Object.assign(new Error('wrapped'), { cause: busy })), 'busy');
    for (const e of [withCode('23505'), withCode('SQLITE_CONSTRAINT'), new Error('boom'), undefined, 'ECONNREFUSED']) {
      assert.equal(classifyStorageError(e), undefined, String(e));
    }
  });
});

describe(
  'sqlite: a full database answers 507 insufficient_storage',
  { skip: !TEST_DIALECTS.includes('sqlite') && 'the run does not include SQLite' },
  () => {
    it('SQLITE_FULL through HTTP', async () => {
      const srv = await startTestServer('sqlite');
      try {
        const { db } = srv.orrery.database;
        // Cap the file at its current size: the next write that needs a page fails with SQLITE_FULL.
        const { rows } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
        await sql.raw(`PRAGMA max_page_count = ${rows[0]!.page_count}`).execute(db);
        const r = await srv.api('POST', '/api/v1/environments', {
          name: 'full',
          provider: 'test',
          default_model: 'echo',
          config: { filler: 'y'.repeat(200_000) },
        });
        assert.equal(r.status, 507, JSON.stringify(r.body));
        assert.deepEqual(r.body, { error: 'insufficient_storage', status: 507, message: r.body.message });
      } finally {
        await srv.close();
      }
    });
  },
);

describe('postgres: a database outage answers 503 database_unavailable with Retry-After', POSTGRES_ONLY, () => {
  it('the test database is stopped, then started again', async () => {
    const srv = await startTestServer('postgres');
    const name = new URL(srv.databaseUrl!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.ORRERY_TEST_PG_URL });
    await admin.connect();
    try {
      assert.equal((await srv.api('GET', '/api/v1/environments')).status, 200);
      // Stop the database: no new connections, and the server's open ones are cut (the timeout
      // makes pg_terminate_backend wait until each backend has exited, so none answers after it).
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query(
        'SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      const down = await srv.api('GET', '/api/v1/environments');
      assert.equal(down.status, 503, JSON.stringify(down.body));
      assert.deepEqual(down.body, { error: 'database_unavailable', status: 503, message: down.body.message });
      assert.match(down.headers.get('retry-after') ?? '', /^\d+$/);
      // Back up: the server recovers without a restart.
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      let up = 0;
      for (let i = 0; i < 20 && up !== 200; i++) up = (await srv.api('GET', '/api/v1/environments')).status;
      assert.equal(up, 200);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
      await srv.close();
    }
  });
});
