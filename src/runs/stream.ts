/**
 * The stream step of a run: a streamed run (`stream: true`) is created `created` and starts when
 * its first subscriber opens its stream (GET /runs/:id/stream). Followers of this process read its
 * live stream (runs/stream-hub.ts); followers on other replicas mirror its stored and signalled
 * chunks (runs/run-mirrors.ts); a single process that did not create the run polls until it ends.
 */
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import type { Notifier } from '../db/notify.ts';
import { docOf, hasEnded, type Run, type RunDoc, type RunRow } from './model.ts';
import type { Plan, RunPlanner } from './plan.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunsInFlight } from './in-flight.ts';
import type { RunViews } from './run-views.ts';
import { forCreation } from './finish.ts';
import { RunMirrors } from './run-mirrors.ts';
import type { StreamHub, LiveRun } from './stream-hub.ts';
import type { ChunkSink } from './virtual.ts';
import * as store from './store.ts';
import { getAsyncRun } from './async-store.ts';
import type { RunTrace } from '../telemetry/hooks.ts';

export interface RunStreamsDeps {
  db: store.Db;
  dialect: OrreryDialect;
  hub: StreamHub;
  notifier: Notifier;
  writer: RunWrites;
  inFlight: RunsInFlight;
  planner: RunPlanner;
  views: RunViews;
  /** This replica's id: the executor a claim records. */
  replicaId: string;
  /** A run's call and finish: the run as it ended. */
  execute(
    row: RunRow,
    doc: RunDoc,
    plan: Plan,
    live: ChunkSink,
    opts: { claim?: Promise<boolean>; trace?: RunTrace },
  ): Promise<RunRow>;
}

/** What opening a run's stream found: a live stream, the run as it ended, or a poll until it ends. */
export interface Followed {
  live?: LiveRun;
  finished?: Run;
  poll?: () => Promise<Run | undefined>;
}

export class RunStreams {
  /** Claims of streamed runs in progress in this process, by run id (see claim()). */
  private readonly claims = new Map<string, Promise<LiveRun | undefined>>();
  private readonly mirrors: RunMirrors;

  constructor(private readonly deps: RunStreamsDeps) {
    this.mirrors = new RunMirrors(deps.notifier);
    if (deps.notifier.crossProcess) this.mirrors.start();
  }

  /**
   * Opens the stream of a run: a `created` run starts executing (once, whoever asks first); a run
   * executing here is followed live after a replay; a finished run just closes.
   */
  async follow(p: Principal, id: string): Promise<Followed> {
    const { db, dialect, hub, notifier, inFlight, views } = this.deps;
    // A run this process created and nobody streams yet is as it was written: no need to read it.
    const mine = inFlight.pending.get(id)?.row;
    const row =
      mine && mine.account_id === p.account.id && mine.project_id === p.project.id ? mine : await views.row(p, id);
    if (hasEnded(row.status)) return { finished: await views.expand(p, row) };
    // A claim in progress here (another subscriber's): its stream, once the claim is stored.
    const live = hub.get(id) ?? (await this.claims.get(id));
    if (live) return { live };
    // An async run's job starts it (runs/async.ts); its followers wait for it like a run elsewhere's.
    if (row.status === 'created' && !(await getAsyncRun(db, id))) {
      const started = await this.claim(p, row);
      if (started) return { live: started };
      const raced = hub.get(id);
      if (raced) return { live: raced };
    }
    // Executing on another replica: mirror its stored and signalled chunks.
    if (notifier.crossProcess) {
      return {
        live: this.mirrors.follow(id, {
          chunksAfter: (runId, seq) => store.chunksAfter(db, runId, seq),
          finalRun: async (runId) => {
            const r = await store.getRun(db, dialect, scopeOf(p), runId);
            return r && hasEnded(r.status) ? views.expand(p, r) : undefined;
          },
        }),
      };
    }
    // A single process (SQLite) that did not create the run (e.g. after a restart): poll until it ends.
    return {
      poll: async () => {
        const r = await store.getRun(db, dialect, scopeOf(p), id);
        return r && hasEnded(r.status) ? views.expand(p, r) : undefined;
      },
    };
  }

  /** Stops mirroring other replicas' runs (shutdown). */
  close(): void {
    this.mirrors.close();
  }

  /**
   * Claims a `created` run and starts it (its stream), or answers undefined if another claim won.
   * Subscribers of this process share one claim: between the claim's commit and the stream's
   * opening, another subscriber would otherwise see a `processing` run with no stream here.
   */
  private claim(p: Principal, row: RunRow): Promise<LiveRun | undefined> {
    let claim = this.claims.get(row.id);
    if (!claim) {
      claim = this.claimAndStart(p, row).finally(() => this.claims.delete(row.id));
      this.claims.set(row.id, claim);
    }
    return claim;
  }

  private async claimAndStart(p: Principal, row: RunRow): Promise<LiveRun | undefined> {
    const { inFlight, writer, hub, notifier, planner } = this.deps;
    const id = row.id;
    const mine = inFlight.pending.get(id);
    const plan = mine?.plan ?? (await planner.replan(p, row));
    inFlight.executing.add(id);
    const claim = writer.update(
      id,
      { status: 'processing', updated_at: nowIso(), executor: this.deps.replicaId },
      'created',
    );
    // One process (SQLite) that created the run and holds its plan: no other process can claim it,
    // and this one claims it once (claim()), so it starts at once and its claim is written
    // meanwhile, ahead of its outcome. The row was `created` before any provider call (principle
    // 3); the claim decides only whether the outcome is stored (runs/finish.ts). Waiting for the
    // claim's commit was most of the time a subscriber waited for the first chunk (bench/README.md,
    // issue 17, seventh pass). Elsewhere the run starts once its claim is stored.
    const meanwhile = mine !== undefined && !notifier.crossProcess;
    if (!meanwhile) {
      const claimed = await claim.catch((err) => {
        inFlight.executing.delete(id);
        throw err;
      });
      if (!claimed) {
        inFlight.executing.delete(id);
        return undefined;
      }
    }
    inFlight.pending.delete(id);
    const started = hub.open(id);
    // A claim written meanwhile that failed to be written is no other claim's win: the outcome is
    // written anyway (if that fails too, the row stays `created` and the unconsumed sweep fails it).
    this.runStream(p, row, plan, started, meanwhile ? claim.catch(() => true) : undefined, mine?.trace);
    return started;
  }

  /** Executes a claimed streamed run; its stream closes with the final run (undefined: subscribers read it). */
  private runStream(
    p: Principal,
    row: RunRow,
    plan: Plan,
    live: LiveRun,
    claim?: Promise<boolean>,
    trace?: RunTrace,
  ): void {
    const { hub, views } = this.deps;
    void this.deps.execute({ ...row, status: 'processing' }, docOf(row), plan, live, { claim, trace }).then(
      async (final) =>
        hub.close(
          row.id,
          await views.withEmbeddings(final, await views.expand(p, final).catch(() => forCreation(final))),
        ),
      () => hub.close(row.id, undefined),
    );
  }
}
