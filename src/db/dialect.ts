/**
 * The one place that knows which database is underneath (style D3/K1). Feature code asks for a
 * helper or a capability; it never branches on the dialect name itself.
 */
export type DialectName = 'sqlite' | 'postgres';

interface DialectCaps {
  /** LISTEN/NOTIFY for cross-replica signals. */
  readonly notify: boolean;
  /** Several processes may write at once (PostgreSQL), so jobs need row locks. */
  readonly concurrentWriters: boolean;
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
  caps: { notify: false, concurrentWriters: false },
  toJson: (v) => (v === undefined || v === null ? null : JSON.stringify(v)),
  fromJson: (v) => (v === null || v === undefined ? (null as never) : parseIfText(v)),
};

export const postgresDialect: OrreryDialect = {
  name: 'postgres',
  caps: { notify: true, concurrentWriters: true },
  // pg serialises objects itself, but arrays would become PostgreSQL arrays: stringify always.
  toJson: (v) => (v === undefined || v === null ? null : JSON.stringify(v)),
  // jsonb comes back parsed (a JSON string value is a JS string: never parse it again).
  fromJson: (v) => (v === undefined ? (null as never) : (v as never)),
};
