/**
 * SQL of the job queue. Claiming is one `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING *`:
 * atomic on SQLite (one statement is one transaction, and one process writes), and on PostgreSQL
 * the inner SELECT takes its rows `FOR UPDATE SKIP LOCKED`, so concurrent claimers on several
 * replicas never take the same job and never wait on each other. Every write that finishes an
 * attempt names the lease token it was claimed with: a worker whose lease expired (and whose job
 * another took) can no longer complete, fail or release it.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database, JobTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { EnqueueInput } from './model.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

export type Db = Kysely<Database>;
export type JobRow = Selectable<JobTable>;

const isoIn = (ms: number) => new Date(Date.now() + ms).toISOString();

/**
 * Adds a job, or refreshes the queued (not yet running) job of the same kind and subject: its
 * payload is replaced and it becomes due again, so repeated changes coalesce into one job.
 */
export async function insertJob(db: Db, d: OrreryDialect, input: EnqueueInput, maxAttempts: number): Promise<void> {
  const now = nowIso();
  const runAfter = input.delayMs ? isoIn(input.delayMs) : now;
  const payload = d.toJson(input.payload ?? null);
  await db
    .insertInto('jobs')
    .values({
      id: newId(),
      kind: input.kind,
      account_id: input.scope.account,
      project_id: input.scope.project,
      subject: input.subject,
      payload,
      state: 'queued',
      attempts: 0,
      max_attempts: maxAttempts,
      run_after: runAfter,
      lease_until: null,
      lease_owner: null,
      lease_token: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    // The predicate must be literal SQL: PostgreSQL matches it against the partial index when planning.
    .onConflict((oc) =>
      oc
        .columns(['kind', 'subject'])
        .where(sql<boolean>`state = 'queued'`)
        .doUpdateSet({
          payload,
          run_after: runAfter,
          attempts: 0,
          max_attempts: maxAttempts,
          last_error: null,
          updated_at: now,
          account_id: input.scope.account,
          project_id: input.scope.project,
        }),
    )
    .execute();
}

/** A due job a claim may take: queued and due, or running under an expired lease (its process died). */
const due = (eb: any, alias: string, now: string) =>
  eb.or([
    eb.and([eb(`${alias}.state`, '=', 'queued'), eb(`${alias}.run_after`, '<=', now)]),
    eb.and([eb(`${alias}.state`, '=', 'running'), eb(`${alias}.lease_until`, '<', now)]),
  ]);

/** No other job of the same subject runs under a live lease: one object is never processed twice at once. */
const subjectFree = (eb: any, alias: string, now: string) =>
  eb.not(
    eb.exists(
      eb
        .selectFrom('jobs as r')
        .select('r.id')
        .whereRef('r.subject', '=', `${alias}.subject`)
        .whereRef('r.id', '<>', `${alias}.id`)
        .where('r.state', '=', 'running')
        .where('r.lease_until', '>=', now),
    ),
  );

/** A due job as `dueJobsByProject` answers it: its project's `rank`-th oldest due job. */
export interface DueJob {
  id: string;
  project: string;
  rank: number;
}

/** Projects whose oldest due jobs one statement reads (SQLite allows 500 terms in a compound SELECT). */
const PROJECTS_PER_STATEMENT = 100;

/**
 * Up to `perProject` due jobs of each project that has some, oldest first within each project
 * (a read, no lock): what a fair claim chooses from, so one project's backlog of thousands does
 * not hide another project's single job. The projects first, then each one's oldest due jobs
 * with a LIMIT: ranking every due job (a window over the whole backlog, with a per-job test that
 * its subject is free) cost a claim time in proportion to the backlog, and a bulk create that
 * queued 4,000 jobs held the event loop for seconds while they were claimed one by one.
 */
export async function dueJobsByProject(db: Db, kinds: readonly string[], perProject: number): Promise<DueJob[]> {
  if (perProject <= 0 || kinds.length === 0) return [];
  const now = nowIso();
  // The projects that have jobs, one index probe each (jobs_by_project, migration 0040).
  const { rows: projects } = await sql<{ project_id: string }>`WITH RECURSIVE p(project_id) AS (
      SELECT (SELECT min(project_id) FROM jobs)
      UNION ALL SELECT (SELECT min(j.project_id) FROM jobs AS j WHERE j.project_id > p.project_id)
      FROM p WHERE p.project_id IS NOT NULL)
    SELECT project_id FROM p WHERE project_id IS NOT NULL`.execute(db);
  // A project's oldest due jobs: the queued ones and those of an expired lease, each an ordered
  // walk of jobs_by_project that stops at the limit.
  const oldest = (project: string, queued: boolean) =>
    db
      .selectFrom('jobs as j')
      .select(['j.id', 'j.project_id', 'j.run_after'])
      .where('j.project_id', '=', project)
      .where((eb) =>
        queued
          ? eb.and([eb('j.state', '=', 'queued'), eb('j.run_after', '<=', now)])
          : eb.and([eb('j.state', '=', 'running'), eb('j.lease_until', '<', now)]),
      )
      .where('j.kind', 'in', kinds)
      .where((eb) => subjectFree(eb, 'j', now))
      .orderBy('j.run_after')
      .orderBy('j.id')
      .limit(perProject);
  const jobs: (DueJob & { runAfter: string })[] = [];
  for (let i = 0; i < projects.length; i += PROJECTS_PER_STATEMENT) {
    const batch = projects.slice(i, i + PROJECTS_PER_STATEMENT).map((p) => p.project_id);
    // Each arm in a subquery of its own, so its ORDER BY and LIMIT stay its own.
    const arms = batch.flatMap((p) => [true, false].map((queued) => sql`SELECT * FROM (${oldest(p, queued)}) AS o`));
    const { rows } = await sql<{ id: string; project_id: string; run_after: string }>`${sql.join(
      arms,
      sql` UNION ALL `,
    )}`.execute(db);
    const rank = new Map<string, number>();
    rows.sort((a, b) => cmp(a.run_after, b.run_after) || cmp(a.id, b.id));
    for (const r of rows) {
      const n = (rank.get(r.project_id) ?? 0) + 1;
      rank.set(r.project_id, n);
      if (n > perProject) continue;
      jobs.push({ id: r.id, project: r.project_id, rank: n, runAfter: r.run_after });
    }
  }
  jobs.sort((a, b) => a.rank - b.rank || cmp(a.runAfter, b.runAfter) || cmp(a.id, b.id));
  return jobs.map(({ id, project, rank }) => ({ id, project, rank }));
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Takes the jobs of `ids` that are still due (another replica may have taken some since they were
 * read): leased to `owner`, their attempt counted. Atomic as one statement; on PostgreSQL the rows
 * are taken `FOR UPDATE SKIP LOCKED`, so concurrent claimers never take the same job.
 */
export async function claimJobsById(
  db: Db,
  d: OrreryDialect,
  ids: readonly string[],
  owner: string,
  leaseMs: number,
): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  const now = nowIso();
  let pick = db
    .selectFrom('jobs as j')
    .select('j.id')
    .where('j.id', 'in', ids)
    .where((eb) => due(eb, 'j', now))
    .where((eb) => subjectFree(eb, 'j', now));
  if (d.caps.concurrentWriters) pick = pick.forUpdate().skipLocked();
  return db
    .updateTable('jobs')
    .set({
      state: 'running',
      lease_until: isoIn(leaseMs),
      lease_owner: owner,
      lease_token: newId(),
      attempts: sql<number>`attempts + 1`,
      updated_at: now,
    })
    .where('id', 'in', pick)
    .returningAll()
    .execute();
}

/** Extends the leases of jobs still held; answers the ids whose lease was lost. */
export async function extendLeases(
  db: Db,
  held: ReadonlyArray<{ id: string; token: string }>,
  leaseMs: number,
): Promise<string[]> {
  const lost: string[] = [];
  const until = isoIn(leaseMs);
  for (const h of held) {
    const r = await db
      .updateTable('jobs')
      .set({ lease_until: until })
      .where('id', '=', h.id)
      .where('lease_token', '=', h.token)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) lost.push(h.id);
  }
  return lost;
}

/** The job is done (or given up): it leaves the queue. */
export async function deleteJob(db: Db, id: string, token: string): Promise<boolean> {
  const r = await db.deleteFrom('jobs').where('id', '=', id).where('lease_token', '=', token).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * Back to the queue after a transient failure, due after `delayMs`. When a newer queued job of
 * the same kind and subject exists (enqueued while this one ran), this one is dropped instead:
 * the newer one does the same work on fresher input.
 */
export async function requeueJob(
  db: Db,
  id: string,
  token: string,
  delayMs: number,
  error: string | null,
  countAttempt: boolean,
): Promise<void> {
  const row = await db
    .selectFrom('jobs')
    .select(['kind', 'subject'])
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .executeTakeFirst();
  if (!row) return;
  const newer = await db
    .selectFrom('jobs')
    .select('id')
    .where('kind', '=', row.kind)
    .where('subject', '=', row.subject)
    .where('state', '=', 'queued')
    .executeTakeFirst();
  const drop = () => db.deleteFrom('jobs').where('id', '=', id).where('lease_token', '=', token).execute();
  if (newer) {
    await drop();
    return;
  }
  try {
    await db
      .updateTable('jobs')
      .set({
        state: 'queued',
        run_after: isoIn(delayMs),
        lease_until: null,
        lease_owner: null,
        lease_token: null,
        ...(error !== null ? { last_error: error.slice(0, 2000) } : {}),
        ...(countAttempt ? {} : { attempts: sql<number>`attempts - 1` }),
        updated_at: nowIso(),
      })
      .where('id', '=', id)
      .where('lease_token', '=', token)
      .execute();
  } catch (err) {
    // A newer job was queued between the check and the update (the one-queued-job index).
    if (
      !(await db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', row.kind)
        .where('subject', '=', row.subject)
        .where('state', '=', 'queued')
        .executeTakeFirst())
    )
      throw err;
    await drop();
  }
}

/** Queued jobs by kind (for the `orrery_jobs_queued` gauge). */
export async function countQueued(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('jobs')
    .select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
    .where('state', '=', 'queued')
    .groupBy('kind')
    .execute();
  return new Map(rows.map((r) => [r.kind, Number(r.n)]));
}

/** A project's queued and finished jobs. */
export const deleteProjectJobs = (db: Db, s: ProjectScope) => deleteProjectRows(db, ['jobs'], s);

/**
 * Ends at once the leases that replicas no longer alive hold on running jobs of these kinds, so
 * the next claim takes them over without waiting for the lease to lapse; how many were ended.
 */
export async function expireLeasesOfDead(
  db: Db,
  kinds: readonly string[],
  alive: ReadonlySet<string>,
): Promise<number> {
  if (kinds.length === 0 || alive.size === 0) return 0;
  const r = await db
    .updateTable('jobs')
    .set({ lease_until: new Date(0).toISOString() })
    .where('state', '=', 'running')
    .where('kind', 'in', [...kinds])
    .where('lease_owner', 'not in', [...alive])
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** How many jobs of the given kinds a project has (queued, running or waiting to retry). */
export async function countProjectJobs(
  db: Db,
  s: { account: string; project: string },
  kinds: string[],
): Promise<number> {
  const r = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('kind', 'in', kinds)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
