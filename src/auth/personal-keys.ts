/**
 * The API keys a user made (personal keys, `created_by` `user:<id>`): users/ suspends them with
 * the user and deletes them with it, inside its own transaction. Auth's store keeps the SQL.
 */
import type { Db } from './store.ts';
import * as store from './store.ts';

/** The ids of the API keys a user made. */
export const personalKeys = (db: Db, account: string, user: string): Promise<string[]> =>
  store.keyIdsCreatedBy(db, account, `user:${user}`);

export const disableKeys = (db: Db, ids: string[]) => (ids.length ? store.disableKeyRows(db, ids) : undefined);

export const deleteKeys = (db: Db, ids: string[]) => (ids.length ? store.deleteKeyRows(db, ids) : undefined);
