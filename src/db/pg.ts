/**
 * The PostgreSQL driver, loaded only when ORRERY_DATABASE_URL names a PostgreSQL database: an
 * embedded (SQLite) server never holds it. Loading it also sets how its values come back.
 */
import type pgModule from 'pg';

export type Pg = typeof pgModule;

let loading: Promise<Pg> | undefined;

export function loadPg(): Promise<Pg> {
  return (loading ??= import('pg').then(({ default: pg }) => {
    // pg returns int8 (count(*), bigint) as strings; our counts fit in a double.
    pg.types.setTypeParser(20, (v) => Number(v));
    return pg;
  }));
}
