/**
 * A durable job queue in the database (`jobs` table), off the request path.
 *
 * - **Durable:** a job is a row; it is deleted only once its handler finished. A process that dies
 *   mid-job leaves its row `running` with a lease (`lease_until`, the visibility timeout) that it
 *   no longer extends; once the lease expires any process claims the job again. A process that
 *   shuts down cleanly puts its running jobs back at once.
 * - **Taken once:** claims are atomic (see store.ts: `FOR UPDATE SKIP LOCKED` on PostgreSQL).
 * - **Bounded:** at most `concurrency` jobs run in this process at a time.
 * - **Fair across projects:** each claim serves the projects with due jobs in turn (the one served
 *   longest ago first), and one project holds at most `perProject` of this process's slots
 *   (`concurrency - 1` by default), so one project's flood leaves a slot for every other and its
 *   backlog waits behind itself. Content processing and embeddings share this queue.
 * - **Retries:** a transient failure puts the job back with exponential backoff (and jitter),
 *   until `maxAttempts`; a job lost that many times (its process keeps dying on it) is given up too.
 *
 * New work in this process starts at once (`enqueue` wakes the pump), each job in a turn of the
 * event loop of its own; other processes find it at their next poll.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Metrics } from '../http/metrics.ts';
import { JobReleased, PermanentJobError, type EnqueueInput, type Job, type JobHandler } from './model.ts';
import {
  claimJobsById,
  countQueued,
  deleteJob,
  dueJobsByProject,
  expireLeasesOfDead,
  extendLeases,
  insertJob,
  requeueJob,
  type JobRow,
} from './store.ts';
import { FairQueue } from '../util/fair-queue.ts';
import { nextTurn } from '../util/turns.ts';

export interface JobQueueOptions {
  /** Jobs run at once in this process. */
  concurrency: number;
  /** Jobs of one project run at once in this process (default `concurrency - 1`, at least 1). */
  perProject?: number;
  /** Visibility timeout: a running job whose lease is not extended for this long is taken again. */
  leaseMs: number;
  /** Attempts before a job is given up. */
  maxAttempts: number;
  /** How often to look for due jobs (new ones in this process start at once). */
  pollMs?: number;
  /** Backoff before attempt n+1 after a transient failure of attempt n. */
  backoffMs?: (attempt: number) => number;
  /** Who holds the leases (the replica id). */
  owner: string;
  metrics?: Metrics;
  onError?: (err: unknown, what: string) => void;
}

interface Running {
  project: string;
  token: string;
  abort: AbortController;
  done: Promise<void>;
}

const defaultBackoff = (attempt: number): number => {
  const base = Math.min(300_000, 1000 * 4 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.75 + Math.random() * 0.5));
};

export class JobQueue {
  private readonly handlers = new Map<string, JobHandler<any>>();
  private readonly running = new Map<string, Running>();
  private pollTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private started = false;
  private stopping = false;
  private pumping = false;
  private pumpAgain = false;
  /** Running jobs per project in this process (for the per-project cap). */
  private readonly runningByProject = new Map<string, number>();
  /** When each project was last served a slot (a claim counter): the one served longest ago goes first. */
  private readonly lastServed = new Map<string, number>();
  private served = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly opts: JobQueueOptions,
  ) {}

  register<P>(kind: string, handler: JobHandler<P>): void {
    this.handlers.set(kind, handler as JobHandler<any>);
  }

  /** Jobs running in this process now. */
  get active(): number {
    return this.running.size;
  }

  get concurrency(): number {
    return this.opts.concurrency;
  }

  /**
   * Queues a job (or refreshes the queued one of the same kind and subject). Pass `db` to enqueue
   * inside a caller's transaction: the job then exists exactly when the caller's write commits.
   */
  async enqueue<P>(input: EnqueueInput<P>, db: Kysely<Database> = this.db): Promise<void> {
    await insertJob(db, this.dialect, input as EnqueueInput, this.opts.maxAttempts);
    if (db === this.db) this.wake();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const pollMs = this.opts.pollMs ?? 1000;
    this.pollTimer = setInterval(() => this.wake(), pollMs);
    this.pollTimer.unref();
    this.leaseTimer = setInterval(() => void this.extend(), Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.leaseTimer.unref();
    this.wake();
  }

  /** Looks for due jobs now (coalesced: one claim loop at a time). */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((err) => this.opts.onError?.(err, 'claim jobs'))
      .finally(() => {
        this.pumping = false;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.wake();
        }
      });
  }

  /**
   * Stops claiming, aborts the jobs running here and puts them back in the queue (their attempt
   * is not counted), waiting at most `graceMs` for their handlers to notice.
   */
  async stop(graceMs = 5000): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.pollTimer);
    clearInterval(this.leaseTimer);
    const running = [...this.running.entries()];
    for (const [, r] of running) r.abort.abort(new JobReleased());
    const all = Promise.allSettled(running.map(([, r]) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    // Handlers that did not settle in time: release their jobs anyway (their writes, if any,
    // check the lease token and become no-ops).
    for (const [id, r] of this.running) {
      await requeueJob(this.db, id, r.token, 0, null, false).catch((err) => this.opts.onError?.(err, 'release a job'));
    }
  }

  /**
   * Takes over the running jobs (of the kinds handled here) that replicas not in `alive` hold: their
   * heartbeat stopped, or their process on this host is gone (cluster/replicas.ts).
   */
  async takeOverFrom(alive: ReadonlySet<string>): Promise<void> {
    if ((await expireLeasesOfDead(this.db, [...this.handlers.keys()], alive)) > 0) this.wake();
  }

  /** Refreshes the `orrery_jobs_queued` gauge. */
  async refreshMetrics(): Promise<void> {
    const m = this.opts.metrics;
    if (!m) return;
    const counts = await countQueued(this.db);
    for (const kind of this.handlers.keys()) m.jobsQueued.set({ kind }, counts.get(kind) ?? 0);
  }

  get perProject(): number {
    return Math.max(1, this.opts.perProject ?? this.opts.concurrency - 1);
  }

  private async pump(): Promise<void> {
    for (;;) {
      const free = this.opts.concurrency - this.running.size;
      if (free <= 0 || this.stopping) return;
      const chosen = await this.chooseFairly(free);
      if (chosen.length === 0) return;
      const rows = await claimJobsById(this.db, this.dialect, chosen, this.opts.owner, this.opts.leaseMs);
      for (const row of rows) this.launch(row);
      // Fewer than chosen: another replica took some; fewer than free: none other may start now.
      if (rows.length < chosen.length || chosen.length < free) return;
    }
  }

  /**
   * Up to `free` ids of due jobs, the projects served in turn (the one served longest ago first,
   * each project's jobs oldest first), none past its per-project cap.
   */
  private async chooseFairly(free: number): Promise<string[]> {
    const cap = this.perProject;
    const due = await dueJobsByProject(this.db, [...this.handlers.keys()], Math.min(free, cap));
    const firstSeen = new Map<string, number>();
    due.forEach((j, i) => firstSeen.has(j.project) || firstSeen.set(j.project, i));
    const projects = [...firstSeen.keys()].sort(
      (a, b) =>
        (this.lastServed.get(a) ?? -1) - (this.lastServed.get(b) ?? -1) || firstSeen.get(a)! - firstSeen.get(b)!,
    );
    const turn = new FairQueue<string>();
    const byProject = new Map<string, string[]>(projects.map((p) => [p, []]));
    for (const j of due) byProject.get(j.project)!.push(j.id);
    for (const [project, ids] of byProject) for (const id of ids) turn.push(project, id);
    const taking = new Map<string, number>();
    const chosen: string[] = [];
    while (chosen.length < free) {
      const next = turn.shift(
        (project) => (this.runningByProject.get(project) ?? 0) + (taking.get(project) ?? 0) < cap,
      );
      if (!next) break;
      taking.set(next.tenant, (taking.get(next.tenant) ?? 0) + 1);
      this.lastServed.set(next.tenant, this.served++);
      chosen.push(next.item);
    }
    return chosen;
  }

  private launch(row: JobRow): void {
    const abort = new AbortController();
    const token = row.lease_token!;
    const project = row.project_id;
    const entry: Running = { project, token, abort, done: Promise.resolve() };
    this.running.set(row.id, entry);
    this.runningByProject.set(project, (this.runningByProject.get(project) ?? 0) + 1);
    entry.done = this.execute(row, token, abort.signal)
      .catch((err) => this.opts.onError?.(err, `finish job ${row.kind} ${row.id}`))
      .finally(() => {
        this.running.delete(row.id);
        const left = (this.runningByProject.get(project) ?? 1) - 1;
        if (left > 0) this.runningByProject.set(project, left);
        else this.runningByProject.delete(project);
        this.wake();
      });
  }

  private async execute(row: JobRow, token: string, signal: AbortSignal): Promise<void> {
    // Each job starts in a turn of its own: on SQLite a job and the claim of the next one never
    // wait for I/O, so a backlog of a thousand short jobs would otherwise run as one long task.
    await nextTurn();
    const handler = this.handlers.get(row.kind)!;
    const job: Job = {
      id: row.id,
      kind: row.kind,
      scope: { account: row.account_id, project: row.project_id },
      subject: row.subject,
      payload: this.dialect.fromJson(row.payload),
      attempt: Number(row.attempts),
      maxAttempts: Number(row.max_attempts),
      lastError: row.last_error,
    };
    const count = (outcome: string) => this.opts.metrics?.jobs.inc({ kind: row.kind, outcome });
    if (job.attempt > job.maxAttempts) {
      // Claimed again after its lease expired, attempt after attempt: its process keeps dying.
      const err = new PermanentJobError(
        `the job was started ${job.maxAttempts} times and never finished (the process running it stopped or was killed each time)${job.lastError ? `; last error: ${job.lastError}` : ''}`,
      );
      await this.giveUp(handler, job, err);
      await deleteJob(this.db, row.id, token);
      count('failed');
      return;
    }
    try {
      await handler.run(job, signal);
      await deleteJob(this.db, row.id, token);
      count('completed');
    } catch (err) {
      if (signal.aborted || err instanceof JobReleased) {
        await requeueJob(this.db, row.id, token, 0, null, false);
        count('released');
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof PermanentJobError || job.attempt >= job.maxAttempts) {
        await this.giveUp(handler, job, err);
        await deleteJob(this.db, row.id, token);
        count('failed');
        return;
      }
      this.opts.onError?.(
        err,
        `run job ${row.kind} ${row.id} (attempt ${job.attempt} of ${job.maxAttempts}; will retry)`,
      );
      await requeueJob(this.db, row.id, token, (this.opts.backoffMs ?? defaultBackoff)(job.attempt), message, true);
      count('retried');
    }
  }

  private async giveUp(handler: JobHandler, job: Job, err: unknown): Promise<void> {
    try {
      await handler.giveUp?.(job, err);
    } catch (e) {
      this.opts.onError?.(e, `give up job ${job.kind} ${job.id}`);
    }
  }

  private async extend(): Promise<void> {
    if (this.running.size === 0) return;
    const held = [...this.running.entries()].map(([id, r]) => ({ id, token: r.token }));
    try {
      const lost = await extendLeases(this.db, held, this.opts.leaseMs);
      // Another process took the job (our lease had expired): stop working on it.
      for (const id of lost)
        this.running.get(id)?.abort.abort(new Error('the lease of this job was lost to another process'));
    } catch (err) {
      this.opts.onError?.(err, 'extend job leases');
    }
  }
}
