/**
 * `sort: [{field, order}]` → ORDER BY items, for find and search payloads.
 *
 * Order: text columns in code-point order, numbers numerically, missing (NULL) first when
 * ascending and last when descending (Mongo). A JSON field sorts by the value at its fixed path
 * (db/json-sql.ts `findAt`: arrays of objects are not walked; an array sorts as a whole) in
 * Mongo's type order: missing and null, then numbers, strings, objects, arrays, booleans; within
 * a type numbers numerically, strings in code-point order, false before true, objects and arrays
 * tie. Append a unique key (the id) as the last sort key to make pages stable.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import { jsonFindSql, type JsonSql } from '../../db/json-sql.ts';
import { FIND_LIMITS } from './ast.ts';
import { FindQueryError, quoteName } from './errors.ts';
import { isPlainObject, parseFieldPath } from './parse.ts';
import type { FieldResolver } from './compile.ts';
import { table } from '../../util/own.ts';

export interface SortSpec {
  field: string;
  /** 1, 'asc' or 'ascending' (the default); -1, 'desc' or 'descending'. */
  order?: 1 | -1 | 'asc' | 'desc' | 'ascending' | 'descending';
}

const ORDERS: Record<string, 'ASC' | 'DESC'> = table({
  '1': 'ASC',
  asc: 'ASC',
  ascending: 'ASC',
  '-1': 'DESC',
  desc: 'DESC',
  descending: 'DESC',
});

/** ORDER BY items (each a whole item with its direction): `for (const o of keys) q = q.orderBy(o)`. */
export function compileSort(
  sort: unknown,
  resolve: FieldResolver,
  json: JsonSql,
  fieldList?: readonly string[],
): RawBuilder<unknown>[] {
  if (sort === undefined || sort === null) return [];
  if (!Array.isArray(sort)) throw new FindQueryError('sort must be an array of {field, order}', 'sort');
  if (sort.length > FIND_LIMITS.sortKeys)
    throw new FindQueryError(`sort takes at most ${FIND_LIMITS.sortKeys} keys`, 'sort');
  const f = jsonFindSql(json);
  return sort.flatMap((spec: unknown, i) => {
    const at = `sort[${i}]`;
    if (!isPlainObject(spec) || typeof spec.field !== 'string')
      throw new FindQueryError('a sort key is {field, order}', at);
    const order =
      spec.order === undefined
        ? 'ASC'
        : Object.hasOwn(ORDERS, String(spec.order)) && typeof spec.order !== 'object'
          ? ORDERS[String(spec.order)]
          : null;
    if (!order) throw new FindQueryError('order is 1, -1, "asc" or "desc"', at);
    const path = parseFieldPath(spec.field, at);
    const ref = resolve([...path]);
    if (!ref)
      throw new FindQueryError(
        `unknown field ${quoteName(spec.field)}${fieldList?.length ? `; fields: ${fieldList.join(', ')}` : ''}`,
        at,
      );
    const dir = sql.raw(order);
    const nulls = sql.raw(order === 'ASC' ? 'NULLS FIRST' : 'NULLS LAST');
    if (ref.kind === 'column' && ref.type !== 'json') {
      const col = ref.type === 'text' ? f.byteOrder(sql.ref(ref.column)) : sql`${sql.ref(ref.column)}`;
      return [sql`${col} ${dir} ${nulls}`];
    }
    const node = f.findAt(sql.ref(ref.column), ref.kind === 'json' ? ref.path : []);
    const it = f.findItemOf(node);
    const rank = sql`(CASE WHEN ${node} IS NULL THEN 0 WHEN ${it.is('null')} THEN 0 WHEN ${it.is('number')} THEN 1 WHEN ${it.is('string')} THEN 2
      WHEN ${it.is('object')} THEN 3 WHEN ${it.is('array')} THEN 4 ELSE 5 END)`;
    const keys: Expression<unknown>[] = [
      rank,
      it.number,
      f.byteOrder(sql`(CASE WHEN ${it.is('string')} THEN ${it.text} END)`),
      sql`(CASE WHEN ${it.isBoolean(true)} THEN 1 WHEN ${it.isBoolean(false)} THEN 0 END)`,
    ];
    return keys.map((k) => sql`${k} ${dir} ${nulls}`);
  });
}
