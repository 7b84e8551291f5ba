/**
 * 0012: API keys can be disabled (issue 24, the official client's `apikeys.update {enabled}`).
 * Frozen (style K7). `enabled` is 1 or 0 on both databases; every existing key stays enabled.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}
