/**
 * The one place that knows which database is underneath (style D3/K1). Feature code asks for a
 * helper or a capability; it never branches on the dialect name itself.
 */
export type DialectName = 'sqlite' | 'postgres';

interface DialectCaps {
  /** LISTEN/NOTIFY for cross-replica signals. */
  readonly notify: boolean;
  /**
   * Several processes may write at once (PostgreSQL), so jobs need row locks and counters are
   * sequences (with an advisory lock to wait for writers in flight) rather than a row one writer bumps.
   */
  readonly concurrentWriters: boolean;
  /**
   * The generated server secret lives in the data folder (one process owns the database) rather
   * than in the database, where replicas sharing it find it.
   */
  readonly keepsSecretInFile: boolean;
  /**
   * Full text is an FTS5 table beside the rows (keyed by the row's `search_rowid`), so deleting a
   * row deletes its full-text row too (deleteFullTextRows); otherwise it is a column of the row.
   */
  readonly fullTextSideTable: boolean;
  /**
   * The planner walks a partial index only for a statement that states the index's condition as a
   * term (SQLite), so a read over such indexes is split into arms that each state it.
   */
  readonly partialIndexNeedsItsTerm: boolean;
}

export interface OrreryDialect {
  readonly name: DialectName;
  readonly caps: DialectCaps;
  /** Encode a JSON value for a JSON column (text on SQLite, jsonb on PostgreSQL). */
  toJson(value: unknown): unknown;
  /** Decode a JSON column as the driver returned it. */
  fromJson<T = unknown>(value: unknown): T;
}

const parseIfText = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

export const sqliteDialect: OrreryDialect = {
  name: 'sqlite',
  caps: {
    notify: false,
    concurrentWriters: false,
    keepsSecretInFile: true,
    fullTextSideTable: true,
    partialIndexNeedsItsTerm: true,
  },
  toJson: (v) => (v === undefined || v === null ? null : JSON.stringify(v)),
  fromJson: (v) => (v === null || v === undefined ? (null as never) : parseIfText(v)),
};

export const postgresDialect: OrreryDialect = {
  name: 'postgres',
  caps: {
    notify: true,
    concurrentWriters: true,
    keepsSecretInFile: false,
    fullTextSideTable: false,
    partialIndexNeedsItsTerm: false,
  },
  // pg serialises objects itself, but arrays would become PostgreSQL arrays: stringify always.
  toJson: (v) => (v === undefined || v === null ? null : JSON.stringify(v)),
  // jsonb comes back parsed (a JSON string value is a JS string: never parse it again).
  fromJson: (v) => (v === undefined ? (null as never) : (v as never)),
};

/** The capabilities of a dialect known by name (for helpers that are handed the name only). */
export const capsOf = (name: DialectName): DialectCaps => (name === 'postgres' ? postgresDialect : sqliteDialect).caps;
