/**
 * 0017: roles (issue 18). Frozen (style K7). Keys had `admin` or `member`; `member` is now
 * `developer` (everything inside its project), next to `executor`, `reader` and `auditor`.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await sql`UPDATE api_keys SET role = 'developer' WHERE role = 'member'`.execute(db);
}
