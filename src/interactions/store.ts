/** Storage of the interactions feature that its services share. */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

/** A project's interactions, prompts and environments. */
export const deleteProjectInteractions = (db: Kysely<Database>, s: ProjectScope) =>
  deleteProjectRows(db, ['interactions', 'prompts', 'environments'], s);
