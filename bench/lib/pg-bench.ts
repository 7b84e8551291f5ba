/**
 * A PostgreSQL database for a benchmark: a throwaway cluster (or ORRERY_BENCH_PG_URL) given a
 * real buffer pool and sort memory, as any deployment would have, and a database of its own,
 * dropped with the cluster at the end.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
// @ts-expect-error: a plain .mjs helper shared with the test runner
import { findPgBin, startCluster } from '../../scripts/postgres-cluster.mjs';

export interface BenchDatabase {
  /** The connection URL of the benchmark's own database. */
  url: string;
  drop(): Promise<void>;
}

async function tune(cluster: { url: string; dir: string }, settings: Record<string, string>): Promise<void> {
  const c = new pg.Client({ connectionString: cluster.url });
  await c.connect();
  for (const [k, v] of Object.entries(settings)) await c.query(`ALTER SYSTEM SET ${k} = '${v}'`);
  await c.end();
  const pgCtl = join(findPgBin(), 'pg_ctl');
  // -l: the restarted server must not hold our pipes open (spawnSync would wait for it forever).
  const args = ['-D', join(cluster.dir, 'data'), '-l', join(cluster.dir, 'log'), '-w', '-m', 'fast', 'restart'];
  const opts = {
    encoding: 'utf8' as const,
    stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  };
  const r =
    process.getuid?.() === 0
      ? spawnSync('runuser', ['-u', 'postgres', '--', pgCtl, ...args], opts)
      : spawnSync(pgCtl, args, opts);
  if (r.status !== 0) throw new Error(`pg_ctl restart failed: ${r.stderr || r.stdout}`);
}

/** A database on a tuned throwaway cluster (`settings`: postgresql.conf values), or on ORRERY_BENCH_PG_URL. */
export async function benchDatabase(settings: Record<string, string>): Promise<BenchDatabase> {
  const cluster = process.env.ORRERY_BENCH_PG_URL ? undefined : await startCluster();
  if (cluster) await tune(cluster, settings);
  const admin: string = process.env.ORRERY_BENCH_PG_URL ?? cluster.url;
  const name = `orrery_bench_${Date.now().toString(36)}`;
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c2 = new pg.Client({ connectionString: admin });
      await c2.connect();
      await c2.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c2.end();
      cluster?.stop();
    },
  };
}
