/**
 * Conditions over the objects' tables that other features put in their own queries, so that the
 * objects feature alone names its tables (collections filter by type and list members by history).
 */
import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Scope } from '../auth/principal.ts';

type AnyEb = ExpressionBuilder<Database, keyof Database>;

/** `column` (an object type id column) names one of `types`, each an id or the name of a type of the project. */
export function typeIsOneOf(eb: AnyEb, column: Expression<string | null>, s: Scope, types: string[]) {
  return eb.or([
    eb(column, 'in', types),
    eb(
      column,
      'in',
      eb
        .selectFrom('object_types')
        .select('object_types.id')
        .where('object_types.account_id', '=', s.account)
        .where('object_types.project_id', '=', s.project)
        .where('object_types.name', 'in', types),
    ),
  ]);
}

/**
 * The objects whose revision history holds one of the ids `ids` selects: a member revised since it
 * was recorded is found as any revision of its history (the listings then keep the heads).
 */
export function inHistoryOf<Column extends string>(
  eb: ExpressionBuilder<Database, 'objects'>,
  ids: SelectQueryBuilder<Database, keyof Database, Record<Column, string>>,
): Expression<SqlBool> {
  return eb(
    sql<string>`COALESCE(objects.revision_root, objects.id)`,
    'in',
    eb
      .selectFrom('objects as member')
      .where('member.id', 'in', ids)
      .select(sql<string>`COALESCE(member.revision_root, member.id)`.as('root')),
  );
}

/** The ids of every revision of the histories of `ids` (objects of the project), as a subquery. */
export function revisionsInHistoriesOf(eb: AnyEb, s: Scope, ids: readonly string[]) {
  const roots = eb
    .selectFrom('objects as given')
    .select(sql<string>`COALESCE(given.revision_root, given.id)`.as('root'))
    .where('given.account_id', '=', s.account)
    .where('given.project_id', '=', s.project)
    .where('given.id', 'in', ids);
  return eb
    .selectFrom('objects as rev')
    .select('rev.id')
    .where('rev.account_id', '=', s.account)
    .where('rev.project_id', '=', s.project)
    .where(sql<string>`COALESCE(rev.revision_root, rev.id)`, 'in', roots);
}
