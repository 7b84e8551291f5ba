/**
 * Expensive reads (db/read-budget.ts `boundedRead`) wait their turn here, so one project cannot
 * hold every database connection (PostgreSQL) or reader thread (SQLite): at most `perProject` of
 * one project's run at once, at most `total` of all, and the waiting ones are served project by
 * project in turn (util/fair-queue.ts). A project with `queuePerProject` reads already waiting is
 * answered 429 with Retry-After instead of queueing more.
 */
import { OrreryError } from '../util/errors.ts';
import { FairQueue } from '../util/fair-queue.ts';

const PROJECT_READS_VARIABLE = 'ORRERY_PROJECT_READS';
/** Seconds a client refused by a full queue is told to wait. */
const RETRY_AFTER_SECONDS = 1;

class TooManyReads extends OrreryError {
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(perProject: number, queued: number) {
    super(
      'too_many_reads',
      429,
      `this project already runs ${perProject} expensive reads (${PROJECT_READS_VARIABLE}) with ${queued} more waiting; retry when they have answered`,
    );
  }
}

export interface ReadGateLimits {
  perProject: number;
  total: number;
  queuePerProject: number;
}

export class ReadGate {
  private readonly running = new Map<string, number>();
  private readonly waiting = new FairQueue<() => void>();
  private readonly waitingOf = new Map<string, number>();
  private active = 0;

  constructor(readonly limits: ReadGateLimits) {}

  /** Runs `read` when its project's turn comes. */
  async run<T>(project: string, read: () => Promise<T>): Promise<T> {
    if (!this.mayStart(project)) {
      const queued = this.waitingOf.get(project) ?? 0;
      if (queued >= this.limits.queuePerProject) throw new TooManyReads(this.limits.perProject, queued);
      this.waitingOf.set(project, queued + 1);
      await new Promise<void>((resolve) => this.waiting.push(project, resolve));
    } else this.enter(project);
    try {
      return await read();
    } finally {
      this.leave(project);
    }
  }

  private mayStart = (project: string): boolean =>
    this.active < this.limits.total && (this.running.get(project) ?? 0) < this.limits.perProject;

  private enter(project: string): void {
    this.active++;
    this.running.set(project, (this.running.get(project) ?? 0) + 1);
  }

  private leave(project: string): void {
    this.active--;
    const n = (this.running.get(project) ?? 1) - 1;
    if (n) this.running.set(project, n);
    else this.running.delete(project);
    for (let next = this.waiting.shift(this.mayStart); next; next = this.waiting.shift(this.mayStart)) {
      const left = (this.waitingOf.get(next.tenant) ?? 1) - 1;
      if (left) this.waitingOf.set(next.tenant, left);
      else this.waitingOf.delete(next.tenant);
      this.enter(next.tenant);
      next.item();
    }
  }
}
