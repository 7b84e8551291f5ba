/**
 * A prepared run write (runs/store.ts `PreparedRunWrite`) as it crosses to the run writer's
 * thread: arrays of column values, no objects. Structured clone writes every key of an object and
 * the receiving thread internalises each one again (a string-table lookup per key, per row); a
 * run's two writes carry about 50 keys. As arrays, a write cost half as much to send and 43 % as
 * much to receive in a loop (1.1 and 1.6 µs against 2.3 and 3.8, `v8.serialize`), and the thread
 * binds the values in the order they came, without reading them back out of an object. On the
 * whole server the gain was small: 101-110 % of the runs/s (bench/README.md, issue 17, sixteenth
 * pass).
 *
 * A column list travels as one string (`"id,status,…"`): the thread keys its statements by it.
 */
import type { FtsRow } from './lucene-sql/index.ts';
import type { PreparedRunWrite } from './store.ts';

/** Columns named in one string, and their values in that order (undefined values left out). */
export type WireColumns = readonly [columns: string, values: readonly unknown[]];
export type WireFts = readonly [body: string, prompt: string, result: string];

/**
 * A row to insert; `derive`: what the thread derives from its `doc` (search-index.ts `deferFields`):
 * its `search_fields` ('fields'), and for a run that has ended its full-text row too ('all').
 */
export type WireRow = readonly [columns: string, values: readonly unknown[], derive: WireDerive];
type WireDerive = false | 'fields' | 'all';

export type WireWrite =
  | readonly ['insert', rows: readonly WireRow[], fts: readonly (WireFts | null)[], tags: readonly WireTag[]]
  | readonly [
      'update',
      id: string,
      set: WireColumns,
      fts: WireFts | null,
      text: boolean | null,
      fromStatus: string | null,
    ]
  | readonly ['patch', id: string, set: WireColumns, fromStatus: string | null];

/** A tag of the insert's `rows[run]`. */
export type WireTag = readonly [run: number, tag: string];

/** The separator of column names: they are identifiers of our schema (sqlite-run-writes.ts checks each one it splits off). */
export const COLUMN_SEPARATOR = ',';

/** As Kysely, undefined means "not set": such columns are left out. */
function columnsOf(values: Record<string, unknown>): WireColumns {
  const names: string[] = [];
  const list: unknown[] = [];
  for (const c in values) {
    const v = values[c];
    if (v === undefined) continue;
    names.push(c);
    list.push(v);
  }
  return [names.join(COLUMN_SEPARATOR), list];
}

const ftsOf = (f: FtsRow | null): WireFts | null => (f ? [f.body, f.prompt, f.result] : null);

export function toWire(w: PreparedRunWrite): WireWrite {
  if ('insert' in w) {
    const p = w.insert;
    const derive = (i: number): WireDerive => {
      const d = p.deferred?.find((x) => x.row === i);
      return d ? (d.text ? 'all' : 'fields') : false;
    };
    const rows = p.rows.map((row, i): WireRow => [...columnsOf(row), derive(i)]);
    return ['insert', rows, p.fts.map(ftsOf), p.tags.map((t) => [t.run, t.tag])];
  }
  if ('update' in w) {
    const u = w.update;
    return ['update', u.id, columnsOf(u.set), ftsOf(u.fts), u.text ?? null, u.fromStatus ?? null];
  }
  return ['patch', w.patch.id, columnsOf(w.patch.set), w.patch.fromStatus ?? null];
}
