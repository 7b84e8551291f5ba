/**
 * What other features ask of the job queue inside their own queries, so that none of them names
 * its table: conditions the jobs feature writes over it, for a caller's WHERE.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';

export { countProjectJobs } from './store.ts';

/** True where some job (queued, running or waiting to retry) has the id in column `subject` (e.g. 'o.id') as its subject. */
export const hasJob = (subject: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`EXISTS (SELECT j.id FROM jobs AS j WHERE j.subject = ${sql.ref(subject)})`;
