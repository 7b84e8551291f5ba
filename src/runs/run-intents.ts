/**
 * The intent log of blocking runs on SQLite (DESIGN principle 3, issue 17). A lone blocking run
 * used to wait for its `processing` row's commit, a round trip to the run writer's thread of
 * 0.3-0.5 ms, before its provider call, and for its outcome's commit, another, before its answer.
 * Instead, when the writer has nothing else in hand, the row is written here first, one positional
 * write to a file of this process (about 2 µs), and the provider call starts while the writer
 * commits the row; then the run as it ended is written here, and the request is answered while the
 * writer commits that (reads of this process wait for it: runs/read-barrier.ts). Both are in the
 * operating system's hands once written, as a commit is with `synchronous=NORMAL`: a process that
 * dies leaves its log, and the lost-run sweep of any process stores each entry's run: a run that
 * was still executing as a `failed` run (`executor_lost`), as it fails the `processing` rows of a
 * replica that stopped beating; a run that was answered as it was answered.
 *
 * An entry is needed only until its row commits. Entries are written only while the writer holds
 * nothing else, so every earlier one is settled (committed, or stored otherwise) and the log starts
 * over at offset 0; a new epoch marks each start over, and reading stops at the first line of
 * another epoch (the tail of an older, longer start). When the last entry settles, the log's first
 * byte is overwritten, so a run deleted after its row committed is not brought back by a later
 * crash. (Only while a row could not be stored at all, which leaves its entry unsettled, do later
 * entries follow it and stay until the log starts over.)
 *
 * Format, one line per entry: `<epoch: 12 hex digits>\t<kind>\t<the row without doc, JSON>\t<doc,
 * JSON>\n`, the kind one letter (IntentKind). JSON escapes tabs and newlines inside strings, so the
 * fields separate safely. A run may have two entries, its start and its end: the last one counts.
 */
import { closeSync, mkdirSync, openSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunDoc, RunRow } from './model.ts';

/** Past this many bytes of unsettled entries (runs whose rows could not be written), runs wait for their commit again. */
export const INTENT_LOG_MAX_BYTES = 16 * 1024 * 1024;
/** A document longer than this (characters of JSON) waits for its commit: its line would cost the HTTP thread more than the wait. */
export const INTENT_MAX_DOC_LENGTH = 64 * 1024;

const EPOCH_WIDTH = 12;
/** Characters of a log parsed between two turns of the event loop when it is read (about a millisecond's work). */
const PARSE_SLICE = 256 * 1024;
/** An entry's epoch and kind (a log of the previous version has no kind: its entries are starts). */
const LINE = /^([0-9a-f]{12})\t(?:([se])\t)?/;
const SUFFIX = '.log';

/**
 * What an entry records, and so how the sweep stores its run (RunService.restoreLost):
 * - `start`: the `processing` row of a run about to call its provider; stored `failed`
 *   (`executor_lost`) if it has no row.
 * - `end`: the run as it ended and was answered; its row is updated if still `processing`, or
 *   inserted if there is none (a `processing` run cannot be deleted: retention.ts).
 */
export type IntentKind = 'start' | 'end';
const KIND_LETTER: Record<IntentKind, string> = { start: 's', end: 'e' };
const KIND_OF: Record<string, IntentKind> = { s: 'start', e: 'end' };

/** A run as its log entry holds it. */
export interface RecordedRun {
  kind: IntentKind;
  row: Omit<RunRow, 'doc'>;
  doc: RunDoc;
}

export interface IntentLogOptions {
  /** The folder of every process's log (next to the SQLite file). */
  dir: string;
  /** This process's replica id: its log's name, and how other processes know when it is theirs to sweep. */
  replica: string;
}

/** What a sweep did: the runs it stored, and the runs of logs it could not store (their logs stay), with the first error. */
export interface SweepResult {
  restored: number;
  unrestored: Set<string>;
  error?: unknown;
}

export class RunIntentLog {
  private fd: number | undefined;
  /** Where the next entry goes; 0 when every entry so far is settled. */
  private end = 0;
  private epoch = 0;
  /** Entries written and not yet settled. */
  private live = 0;
  private failed = false;
  readonly file: string;

  constructor(private readonly options: IntentLogOptions) {
    this.file = join(options.dir, `${options.replica}${SUFFIX}`);
  }

  /**
   * Writes `row` (its document as `doc`, JSON) and returns the function that settles it once the
   * row is stored; undefined when it cannot be written (the caller waits for its commit instead).
   */
  record(row: RunRow, doc: string, kind: IntentKind = 'start'): (() => void) | undefined {
    if (this.failed || doc.length > INTENT_MAX_DOC_LENGTH) return undefined;
    const { doc: _doc, ...head } = row;
    if (this.live === 0) {
      this.end = 0;
      this.epoch++;
    }
    const line = Buffer.from(
      `${this.epoch.toString(16).padStart(EPOCH_WIDTH, '0')}\t${KIND_LETTER[kind]}\t${JSON.stringify(head)}\t${doc}\n`,
    );
    if (this.end + line.length > INTENT_LOG_MAX_BYTES) return undefined;
    try {
      this.fd ??= this.open();
      // One positional write: the line is in the kernel's page cache when this returns.
      if (writeSync(this.fd, line, 0, line.length, this.end) !== line.length) throw new Error('short write');
    } catch {
      // A log that cannot be written (disk full, permissions) costs runs their commit's wait, never their record.
      this.failed = true;
      return undefined;
    }
    this.end += line.length;
    this.live++;
    let settled = false;
    return () => {
      if (settled) return;
      settled = true;
      if (--this.live === 0) this.invalidate();
    };
  }

  /** Removes this process's log if every entry is settled (shutdown); a log with unsettled entries is left for the sweep. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    if (this.live === 0) unlinkQuietly(this.file);
  }

  /**
   * The logs of processes not in `alive`: each run's last entry is handed to `restore` (which
   * stores the run as its kind says), then the log is removed. A log with a run whose restore
   * failed stays for the next sweep; its other runs are restored, and the ids of those that were
   * not are answered in `unrestored` (with the first error), so that the caller leaves their rows
   * as they are meanwhile.
   */
  async sweep(alive: Set<string>, restore: (run: RecordedRun) => Promise<boolean>): Promise<SweepResult> {
    const result: SweepResult = { restored: 0, unrestored: new Set() };
    let names: string[];
    try {
      names = readdirSync(this.options.dir);
    } catch {
      return result;
    }
    for (const name of names) {
      if (!name.endsWith(SUFFIX)) continue;
      const replica = name.slice(0, -SUFFIX.length);
      if (replica === this.options.replica || alive.has(replica)) continue;
      const file = join(this.options.dir, name);
      const last = new Map<string, RecordedRun>();
      for (const run of await readIntentLog(file)) last.set(run.row.id, run);
      let whole = true;
      for (const run of last.values()) {
        try {
          if (await restore(run)) result.restored++;
        } catch (err) {
          whole = false;
          result.unrestored.add(run.row.id);
          result.error ??= err;
        }
      }
      if (whole) unlinkQuietly(file);
    }
    return result;
  }

  /** Every entry is settled: a first byte that starts no line leaves nothing to read. */
  private invalidate(): void {
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, '#', 0);
    } catch {
      this.failed = true;
    }
  }

  private open(): number {
    mkdirSync(this.options.dir, { recursive: true });
    return openSync(this.file, 'w');
  }
}

/**
 * The entries of one log, in order: the lines of its first line's epoch, up to the first line that
 * is not one. A log may hold up to INTENT_LOG_MAX_BYTES: it is read asynchronously and parsed
 * PARSE_SLICE characters at a time, so that a large one does not hold the event loop.
 */
export async function readIntentLog(file: string): Promise<RecordedRun[]> {
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const size = Math.min((await handle.stat()).size, INTENT_LOG_MAX_BYTES);
      const buf = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const { bytesRead } = await handle.read(buf, read, size - read, read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      text = buf.toString('utf8', 0, read);
    } finally {
      await handle.close();
    }
  } catch {
    return [];
  }
  return parseIntentLog(text);
}

/** The entries of a log's text (readIntentLog), PARSE_SLICE characters between two turns of the event loop. */
export async function parseIntentLog(text: string): Promise<RecordedRun[]> {
  const runs: RecordedRun[] = [];
  let epoch: string | undefined;
  let at = 0;
  let yieldAt = PARSE_SLICE;
  for (;;) {
    if (at >= yieldAt) {
      yieldAt = at + PARSE_SLICE;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const nl = text.indexOf('\n', at);
    if (nl < 0) break; // a line cut short (or none): nothing after it was written in this epoch
    const line = text.slice(at, nl);
    at = nl + 1;
    const m = LINE.exec(line);
    if (!m || (epoch !== undefined && m[1] !== epoch)) break;
    epoch = m[1];
    const from = m[0].length;
    const tab = line.indexOf('\t', from);
    if (tab < 0) break;
    try {
      const row = JSON.parse(line.slice(from, tab)) as Omit<RunRow, 'doc'>;
      const doc = JSON.parse(line.slice(tab + 1)) as RunDoc;
      if (typeof row?.id !== 'string' || typeof doc !== 'object' || doc === null) break;
      runs.push({ kind: KIND_OF[m[2] ?? 's'], row, doc });
    } catch {
      break;
    }
  }
  return runs;
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
