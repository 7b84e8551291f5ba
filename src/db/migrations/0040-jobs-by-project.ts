/**
 * 0040: the jobs of a project in the order a claim takes them (`jobs_by_project`: project, state,
 * due time). A fair claim (jobs/store.ts `dueJobsByProject`) walks the projects that have jobs
 * through it, then reads each one's few oldest due jobs, instead of ranking every due job of
 * every project at each claim. Frozen (style K7).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('jobs_by_project').on('jobs').columns(['project_id', 'state', 'run_after']).execute();
}
