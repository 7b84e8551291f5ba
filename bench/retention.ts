/**
 * Issue 18 benchmark: the retention sweeper on a big runs table (SQLite), and what it does to
 * run writes while it works.
 *
 * RUNS runs (default 1,000,000) are loaded into a fresh server's database through the store's own
 * bulk insert, 10 % of them with a ttl that has passed. Then the same server data is started
 * twice, and blocking runs are driven at saturation (32 connections, DURATION seconds):
 *  - idle: the sweeper's interval is an hour, so it does not run (the baseline);
 *  - sweeping: the sweeper runs every second; the load starts with it, and the time until no
 *    expired run is left is measured from the database.
 *
 *   npm run bench -- retention        (RUNS=1000000 DURATION=20 by default)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { newId } from '../src/db/ids.ts';
import { sqliteDialect } from '../src/db/dialect.ts';
import type { Database } from '../src/db/schema.ts';
import type { RunDoc, RunRow } from '../src/runs/model.ts';
import { insertRuns, type NewRun } from '../src/runs/search-index.ts';
import { encodeRun } from '../src/runs/store.ts';
import { machine, startChild } from './lib/processes.ts';
import { load, runBody, seed } from './lib/runs.ts';

const RUNS = Number(process.env.RUNS ?? 1_000_000);
const DURATION = Number(process.env.DURATION ?? 20);
const BATCH = 2000;
const KEY = 'sk-bench-retention-admin-key-0123456789';
const DAY = 86_400_000;

const dataDir = mkdtempSync(join(tmpdir(), 'orrery-retention-'));
const start = async (sweepSeconds: number) => {
  const child = await startChild(
    ['src/cli.ts', 'serve'],
    {
      ORRERY_DATA_DIR: dataDir,
      ORRERY_ADMIN_KEY: KEY,
      ORRERY_LOG_LEVEL: 'warn',
      ORRERY_RETENTION_SWEEP: String(sweepSeconds),
    },
    '/health',
  );
  return Object.assign(child, { adminKey: KEY });
};
const openDb = () => {
  const handle = new SQLite(join(dataDir, 'orrery.db'));
  handle.pragma('journal_mode = WAL');
  handle.pragma('busy_timeout = 10000');
  return { handle, db: new Kysely<Database>({ dialect: new SqliteDialect({ database: handle }) }) };
};
const expiredLeft = (db: Kysely<Database>) =>
  sql<{
    n: number;
  }>`SELECT count(*) AS n FROM runs WHERE expires_at IS NOT NULL AND expires_at <= ${new Date().toISOString()}`
    .execute(db)
    .then((r) => Number(r.rows[0].n));

try {
  // A server makes the database (migrations, the default project), an interaction to run.
  const first = await start(3600);
  const interaction = await seed(first);
  await first.stop();

  const { handle, db } = openDb();
  const project = await db.selectFrom('projects').select(['id', 'name', 'account_id']).executeTakeFirstOrThrow();
  const account = await db
    .selectFrom('accounts')
    .select(['id', 'name'])
    .where('id', '=', project.account_id)
    .executeTakeFirstOrThrow();
  const now = Date.now();
  let made = 0;
  const next = (): NewRun => {
    const i = made++;
    const expires = i % 10 === 0; // 10 % expire
    const created = now - 30 * DAY + Math.floor((i / RUNS) * 29 * DAY);
    const doc: RunDoc = {
      result: [{ type: 'text', value: `answer number ${i} about the outer planets and their moons` }],
      parameters: { topic: `topic ${i % 997}` },
      prompt: [{ role: 'user', content: `Summarise topic ${i % 997} in one line.` }],
      config: { environment: 'env', model: 'echo' },
      source: {
        type: 'api',
        label: 'apikey:bench',
        principal_type: 'apikey',
        principal_id: 'bench',
        client_ip: '10.0.0.1',
      },
      ttl: expires ? 3600 : 0,
      stream: false,
      interaction: { id: interaction, name: 'bench', endpoint: 'bench', version: 0 },
      environment: { id: 'env', name: 'bench', provider: 'test' },
      account,
      project: { id: project.id, name: project.name },
      created_by: 'apikey:bench',
    } as RunDoc;
    const row = {
      id: newId(),
      account_id: account.id,
      project_id: project.id,
      interaction_id: interaction,
      environment_id: 'env',
      model_id: 'echo',
      status: 'completed',
      parent_id: null,
      finish_reason: 'stop',
      execution_time: 3,
      token_prompt: 8,
      token_result: 12,
      token_total: 20,
      tags: i % 3 ? ['bench'] : [],
      created_at: new Date(created).toISOString(),
      updated_at: new Date(created + 3).toISOString(),
      doc,
      executor: null,
    } as RunRow;
    return { row, tags: row.tags as string[] };
  };
  const loadStarted = performance.now();
  for (let done = 0; done < RUNS; done += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, RUNS - done) }, next);
    await db
      .transaction()
      .execute((trx) => insertRuns(trx, sqliteDialect, batch, (row) => encodeRun(sqliteDialect, row)));
    if ((done / BATCH) % 100 === 0)
      console.log(`  ${done + batch.length} runs, ${((performance.now() - loadStarted) / 1000).toFixed(0)} s`);
  }
  await sql`ANALYZE`.execute(db);
  const expired = await expiredLeft(db);
  console.log(
    `loaded ${RUNS} runs in ${((performance.now() - loadStarted) / 1000).toFixed(0)} s; ${expired} have expired`,
  );
  await db.destroy();
  handle.close();

  const body = runBody(interaction);
  const auth = { authorization: `Bearer ${KEY}` };

  // Baseline: the same data, no sweep.
  // Neither start is warmed up: the sweeper begins a second after its server does.
  const idle = await start(3600);
  const base = await load(`${idle.url}/api/v1/runs`, body, auth, idle, DURATION);
  await idle.stop();
  console.log(`idle: ${base.rps.toFixed(0)} runs/s, p99 ${base.p99} ms`);

  // Sweeping: the sweeper starts a second after the server, the load at once.
  const sweeping = await start(1);
  const watch = openDb();
  const sweepStarted = performance.now();
  let sweptAt: number | undefined;
  const watcher = (async () => {
    for (;;) {
      if ((await expiredLeft(watch.db)) === 0) return (sweptAt = performance.now());
      if (performance.now() - sweepStarted > 600_000) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const during = await load(`${sweeping.url}/api/v1/runs`, body, auth, sweeping, DURATION);
  await watcher;
  await sweeping.stop();
  await watch.db.destroy();
  const sweepSeconds = sweptAt === undefined ? null : +((sweptAt - sweepStarted) / 1000).toFixed(1);
  console.log(
    `sweeping: ${during.rps.toFixed(0)} runs/s, p99 ${during.p99} ms; ${expired} expired runs gone after ${sweepSeconds ?? '>600'} s`,
  );
  if (base.errors || during.errors)
    throw new Error(`errors under load: idle ${base.errors}, sweeping ${during.errors}`);
  console.log(
    JSON.stringify({
      bench: 'retention',
      machine: machine(),
      date: new Date().toISOString().slice(0, 10),
      runs: RUNS,
      expired,
      runs_per_s: { idle: Math.round(base.rps), sweeping: Math.round(during.rps) },
      p99_ms: { idle: base.p99, sweeping: during.p99 },
      ratio: +(during.rps / base.rps).toFixed(3),
      sweep_seconds: sweepSeconds,
    }),
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
