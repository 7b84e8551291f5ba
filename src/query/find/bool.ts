/**
 * Boolean SQL with constants folded at compile time (a condition that cannot hold on a text
 * column is `false`, not `FALSE AND …`). Lists become balanced trees so that long `$or`s stay
 * far below SQLite's expression depth limit (1000).
 */
import { sql, type Expression, type SqlBool } from 'kysely';

export type Bool = boolean | Expression<SqlBool>;

const tree = (xs: readonly Expression<SqlBool>[], op: 'AND' | 'OR'): Expression<SqlBool> => {
  if (xs.length === 1) return xs[0];
  const mid = xs.length >> 1;
  return sql<SqlBool>`(${tree(xs.slice(0, mid), op)} ${sql.raw(op)} ${tree(xs.slice(mid), op)})`;
};

export const and = (parts: readonly Bool[]): Bool => {
  const xs: Expression<SqlBool>[] = [];
  for (const p of parts) {
    if (p === false) return false;
    if (p !== true) xs.push(p);
  }
  return xs.length === 0 ? true : tree(xs, 'AND');
};

export const or = (parts: readonly Bool[]): Bool => {
  const xs: Expression<SqlBool>[] = [];
  for (const p of parts) {
    if (p === true) return true;
    if (p !== false) xs.push(p);
  }
  return xs.length === 0 ? false : tree(xs, 'OR');
};

export const not = (b: Bool): Bool => (typeof b === 'boolean' ? !b : sql<SqlBool>`(NOT ${b})`);

export const toSql = (b: Bool): Expression<SqlBool> =>
  b === true ? sql<SqlBool>`TRUE` : b === false ? sql<SqlBool>`FALSE` : b;
