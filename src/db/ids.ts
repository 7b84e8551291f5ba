/** Time-sortable, opaque ids (ULIDs, lower-cased): newer ids sort after older ones. */
import { monotonicFactory } from 'ulid';

const next = monotonicFactory();

export const newId = (): string => next().toLowerCase();

export const nowIso = (): string => new Date().toISOString();
