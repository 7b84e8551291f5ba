/**
 * The durable job queue on each database: bounded concurrency, each job taken once (two consumers
 * on one database, as two replicas), coalescing, retries with backoff, giving up, and durability:
 * a job released by a clean stop, or abandoned by a consumer that lost its database, is done by
 * another consumer.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type OpenedDatabase } from '../../src/db/open.ts';
import { JobQueue } from '../../src/jobs/queue.ts';
import { PermanentJobError, type Job } from '../../src/jobs/model.ts';
import { TEST_DIALECTS, createPgDatabase, type TestDialect } from '../support/server.ts';

const scope = { account: 'acc', project: 'proj' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(10);
  }
}

interface Place {
  open(): Promise<OpenedDatabase>;
  drop(): Promise<void>;
}

async function place(dialect: TestDialect): Promise<Place> {
  if (dialect === 'postgres') {
    const pg = await createPgDatabase();
    return { open: () => openDatabase({ databaseUrl: pg.url, dataDir: tmpdir() }), drop: pg.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), 'orrery-jobs-'));
  return {
    open: () => openDatabase({ dataDir: dir }),
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: job queue`, () => {
    let where: Place;
    const opened: OpenedDatabase[] = [];
    const queues: JobQueue[] = [];
    const open = async () => {
      const d = await where.open();
      opened.push(d);
      return d;
    };
    const queue = (d: OpenedDatabase, opts: Partial<ConstructorParameters<typeof JobQueue>[2]> = {}) => {
      const q = new JobQueue(d.db, d.dialect, {
        concurrency: 2,
        leaseMs: 5000,
        maxAttempts: 3,
        pollMs: 25,
        owner: `q${queues.length}`,
        backoffMs: () => 30,
        ...opts,
      });
      queues.push(q);
      return q;
    };
    before(async () => {
      where = await place(dialect);
    });
    after(async () => {
      for (const q of queues) await q.stop(100).catch(() => {});
      for (const d of opened) await d.db.destroy().catch(() => {});
      await where.drop();
    });

    it('runs every job once with at most `concurrency` at a time', async () => {
      const d = await open();
      // One project may use every slot here (its default cap is concurrency - 1).
      const q = queue(d, { concurrency: 3, perProject: 3 });
      const runs = new Map<string, number>();
      let now = 0;
      let peak = 0;
      q.register('bounded', {
        run: async (job) => {
          now++;
          peak = Math.max(peak, now);
          runs.set(job.subject, (runs.get(job.subject) ?? 0) + 1);
          await sleep(15);
          now--;
        },
      });
      for (let i = 0; i < 30; i++) await q.enqueue({ kind: 'bounded', scope, subject: `s${i}` });
      q.start();
      await until(() => runs.size === 30 && now === 0);
      await until(
        async () => (await d.db.selectFrom('jobs').select('id').where('kind', '=', 'bounded').execute()).length === 0,
      );
      assert.equal(peak, 3);
      assert.deepEqual([...new Set(runs.values())], [1]);
    });

    it('two consumers on one database (two replicas) take each job once', async () => {
      const a = await open();
      const b = await open();
      const qa = queue(a, { concurrency: 4 });
      const qb = queue(b, { concurrency: 4 });
      const runs = new Map<string, string[]>();
      for (const [name, q] of [
        ['a', qa],
        ['b', qb],
      ] as const) {
        q.register('shared', {
          run: async (job) => {
            runs.set(job.subject, [...(runs.get(job.subject) ?? []), name]);
            await sleep(5 + Math.random() * 10);
          },
        });
      }
      for (let i = 0; i < 120; i++) await qa.enqueue({ kind: 'shared', scope, subject: `j${i}` });
      qa.start();
      qb.start();
      await until(() => runs.size === 120);
      await sleep(100);
      assert.equal(runs.size, 120);
      for (const [subject, by] of runs)
        assert.equal(by.length, 1, `${subject} ran ${by.length} times (${by.join(', ')})`);
      const byA = [...runs.values()].filter((r) => r[0] === 'a').length;
      assert.ok(byA > 0 && byA < 120, `both consumers worked: a took ${byA} of 120`);
    });

    it('enqueueing a subject already queued refreshes that job instead of adding one', async () => {
      const d = await open();
      const q = queue(d);
      const seen: unknown[] = [];
      q.register('coalesce', { run: async (job) => void seen.push(job.payload) });
      await q.enqueue({ kind: 'coalesce', scope, subject: 'same', payload: { v: 1 } });
      await q.enqueue({ kind: 'coalesce', scope, subject: 'same', payload: { v: 2 } });
      await q.enqueue({ kind: 'coalesce', scope, subject: 'same', payload: { v: 3 } });
      q.start();
      await until(() => seen.length === 1);
      await sleep(100);
      assert.deepEqual(seen, [{ v: 3 }]);
    });

    it('retries transient failures with backoff, gives up on permanent ones and when attempts run out', async () => {
      const d = await open();
      const q = queue(d, { maxAttempts: 3, backoffMs: (n) => n * 40 });
      const attempts: Array<{ subject: string; attempt: number; at: number }> = [];
      const gaveUp: Array<{ subject: string; message: string; attempt: number }> = [];
      q.register('flaky', {
        run: async (job: Job) => {
          attempts.push({ subject: job.subject, attempt: job.attempt, at: Date.now() });
          if (job.subject === 'permanent') throw new PermanentJobError('no use retrying');
          if (job.subject === 'always' || job.attempt < 2) throw new Error(`transient ${job.attempt}`);
        },
        giveUp: async (job, err) =>
          void gaveUp.push({ subject: job.subject, message: (err as Error).message, attempt: job.attempt }),
      });
      for (const s of ['once', 'permanent', 'always']) await q.enqueue({ kind: 'flaky', scope, subject: s });
      q.start();
      await until(() => gaveUp.length === 2 && attempts.filter((a) => a.subject === 'once').length === 2);
      await sleep(150);
      const of = (s: string) => attempts.filter((a) => a.subject === s);
      assert.deepEqual(
        of('once').map((a) => a.attempt),
        [1, 2],
      );
      assert.ok(of('once')[1].at - of('once')[0].at >= 35, 'the retry waited for its backoff');
      assert.deepEqual(
        of('permanent').map((a) => a.attempt),
        [1],
      );
      assert.deepEqual(
        of('always').map((a) => a.attempt),
        [1, 2, 3],
      );
      assert.deepEqual(gaveUp.map((g) => [g.subject, g.attempt]).sort(), [
        ['always', 3],
        ['permanent', 1],
      ]);
      assert.equal((await d.db.selectFrom('jobs').select('id').where('kind', '=', 'flaky').execute()).length, 0);
    });

    it('a clean stop puts running jobs back at once; another consumer completes them', async () => {
      const a = await open();
      const qa = queue(a, { leaseMs: 60_000 });
      let started = false;
      qa.register('durable', {
        run: (_job, signal) =>
          new Promise((_, reject) => {
            started = true;
            signal.addEventListener('abort', () => reject(signal.reason));
          }),
      });
      await qa.enqueue({ kind: 'durable', scope, subject: 'stopped-mid-job' });
      qa.start();
      await until(() => started);
      await qa.stop();
      const row = await a.db
        .selectFrom('jobs')
        .selectAll()
        .where('subject', '=', 'stopped-mid-job')
        .executeTakeFirstOrThrow();
      assert.equal(row.state, 'queued');
      assert.equal(Number(row.attempts), 0, 'a released attempt does not count');
      const b = await open();
      const qb = queue(b);
      const done: string[] = [];
      qb.register('durable', { run: async (job) => void done.push(job.subject) });
      qb.start();
      await until(() => done.length === 1);
      assert.deepEqual(done, ['stopped-mid-job']);
    });

    it('a job whose consumer died (lease not extended) is taken again once the lease expires', async () => {
      const a = await open();
      const qa = queue(a, { leaseMs: 400 });
      let started = false;
      qa.register('lease', {
        run: () =>
          new Promise(() => {
            started = true;
          }),
      }); // hangs: the process "dies" below
      await qa.enqueue({ kind: 'lease', scope, subject: 'orphan' });
      qa.start();
      await until(() => started);
      // The consumer loses its database for good, as a killed process does: nothing extends its lease.
      await a.db.destroy();
      opened.splice(opened.indexOf(a), 1);
      const b = await open();
      const held = await b.db
        .selectFrom('jobs')
        .select(['state', 'lease_until'])
        .where('subject', '=', 'orphan')
        .executeTakeFirstOrThrow();
      assert.equal(held.state, 'running');
      const leaseEnd = Date.parse(held.lease_until!);
      const qb = queue(b, { leaseMs: 400 });
      const done: Array<{ subject: string; attempt: number; at: number }> = [];
      qb.register('lease', {
        run: async (job) => void done.push({ subject: job.subject, attempt: job.attempt, at: Date.now() }),
      });
      qb.start();
      await until(() => done.length === 1);
      assert.equal(done[0].subject, 'orphan');
      assert.equal(done[0].attempt, 2, 'the lost attempt counts');
      assert.ok(done[0].at >= leaseEnd, `taken only after the lease expired (${done[0].at - leaseEnd} ms after)`);
    });

    it("serves projects in turn: another project's job starts before a flooding project's backlog drains", async () => {
      const d = await open();
      const q = queue(d, { concurrency: 1 });
      const order: string[] = [];
      q.register('fair', {
        run: async (job) => {
          order.push(`${job.scope.project}:${job.subject}`);
          await sleep(5);
        },
      });
      for (let i = 0; i < 8; i++)
        await q.enqueue({ kind: 'fair', scope: { account: 'acc', project: 'flood' }, subject: `a${i}` });
      await q.enqueue({ kind: 'fair', scope: { account: 'acc', project: 'quiet' }, subject: 'b0' });
      q.start();
      await until(() => order.length === 9);
      // The flood's oldest job first (it was due first), then the quiet project's, then the backlog.
      assert.deepEqual(order.slice(0, 2), ['flood:a0', 'quiet:b0'], order.join(' '));
      assert.deepEqual(
        order.filter((o) => o.startsWith('flood:')),
        Array.from({ length: 8 }, (_, i) => `flood:a${i}`),
        "each project's jobs keep their order",
      );
    });

    it('a project keeps at most concurrency - 1 slots busy: a job arriving mid-flood starts at once', async () => {
      const d = await open();
      const q = queue(d, { concurrency: 3 });
      const running = new Map<string, number>();
      const started: string[] = [];
      let peakFlood = 0;
      const release: Array<() => void> = [];
      q.register('capped', {
        run: async (job) => {
          const p = job.scope.project;
          running.set(p, (running.get(p) ?? 0) + 1);
          if (p === 'flood') peakFlood = Math.max(peakFlood, running.get(p)!);
          started.push(`${p}:${job.subject}`);
          // The flood's jobs hold their slots until the test lets them go.
          if (p === 'flood') await new Promise<void>((r) => release.push(r));
          running.set(p, running.get(p)! - 1);
        },
      });
      for (let i = 0; i < 6; i++)
        await q.enqueue({ kind: 'capped', scope: { account: 'acc', project: 'flood' }, subject: `f${i}` });
      q.start();
      await until(() => running.get('flood') === 2);
      await q.enqueue({ kind: 'capped', scope: { account: 'acc', project: 'quiet' }, subject: 'q0' });
      // Served while both of the flood's jobs still hold their slots.
      await until(() => started.includes('quiet:q0'));
      assert.equal(running.get('flood'), 2);
      assert.equal(started.filter((s) => s.startsWith('flood:')).length, 2, started.join(' '));
      while (started.filter((s) => s.startsWith('flood:')).length < 6 || release.length) {
        release.shift()?.();
        await sleep(10);
      }
      await until(() => (running.get('flood') ?? 0) === 0);
      assert.equal(peakFlood, 2, 'the flood never held the third slot');
    });
  });
}
