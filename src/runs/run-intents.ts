/**
 * The intent log of blocking runs on SQLite (DESIGN principle 3, issue 17). A blocking run used to
 * wait for two commits, each a round trip to the run writer's thread: its `processing` row's before
 * its provider call, its outcome's before its answer. Instead, a run's row may be written here
 * first, one positional write to a file of this process (a few µs), and the run goes on while the
 * writer commits it:
 * - its start, when the writer has nothing else in hand (a lone run): its provider call starts at
 *   once. Under load the start waits for its commit, shared with the others': not waiting then cost
 *   more than it saved (bench/README.md, issue 17, ninth pass).
 * - its end, once its provider answered, alone or under load: the request is answered at once, and
 *   reads of this process wait for the commit (runs/read-barrier.ts). Under load, 111-114 % of the
 *   runs/s of waiting for it (eleventh pass): each run still waits for its start's commit, which
 *   keeps the writer's queue in step with the requests.
 * An entry is in the operating system's hands once written, as a commit is with
 * `synchronous=NORMAL`: a process that dies leaves its log, and the lost-run sweep of any process
 * stores each entry's run: a run that was still executing as a `failed` run (`executor_lost`), as
 * it fails the `processing` rows of a replica that stopped beating; a run that was answered as it
 * was answered.
 *
 * An entry is needed only until its row commits. The log is a few segments, files of up to
 * INTENT_SEGMENT_BYTES written from the start: entries go to the current segment; when it is full, to
 * another whose entries are all settled, or to a new one. When a segment's last entry settles,
 * its first byte is overwritten, so that a run deleted after its row committed is not brought back
 * by a later crash, and the segment starts over at offset 0 with a new epoch when it is used again.
 * Reading a segment stops at the first line of another epoch (the tail of an older, longer use).
 * Epochs grow across the log, so the segments of a dead process read in epoch order give its
 * entries in the order they were written. A segment with an entry not yet settled (a run in
 * flight, or one whose row could not be stored) stays readable with its settled entries: restoring
 * those after a crash is a no-op, their rows hold them, unless their run was deleted meanwhile.
 *
 * Format, one line per entry: `<epoch: 12 hex digits>\t<kind>\t<the row without doc, JSON>\t<doc,
 * JSON>\n`, the kind one letter (IntentKind). JSON escapes tabs and newlines inside strings, so the
 * fields separate safely. A run may have two entries, its start and its end: the last one counts.
 * Segment 0 is `<replica>.log` (the name of the whole log before segments), segment n
 * `<replica>.<n>.log`.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readSync, unlinkSync, writeSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import type { RunDoc, RunRow } from './model.ts';

/** Past this many bytes of unsettled entries (runs whose rows could not be written), runs wait for their commit again. */
export const INTENT_LOG_MAX_BYTES = 16 * 1024 * 1024;
/** A segment takes entries up to this many bytes; under load, one fills in a fraction of a second and its entries have settled before it is needed again. */
export const INTENT_SEGMENT_BYTES = 1024 * 1024;
const MAX_SEGMENTS = INTENT_LOG_MAX_BYTES / INTENT_SEGMENT_BYTES;
/** A document longer than this (characters of JSON) waits for its commit: its line would cost the HTTP thread more than the wait. */
export const INTENT_MAX_DOC_LENGTH = 64 * 1024;

const EPOCH_WIDTH = 12;
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

/** One file of a log. */
interface Segment {
  readonly file: string;
  fd: number | undefined;
  /** Where its next entry goes. */
  end: number;
  /** Its entries written and not yet settled. */
  live: number;
  /** The epoch of its lines since it last started over. */
  epoch: number;
}

export class RunIntentLog {
  private readonly segments: Segment[] = [];
  private current: Segment;
  /** The epoch of the last start over of any segment. */
  private epoch = 0;
  private failed = false;

  constructor(private readonly options: IntentLogOptions) {
    this.current = this.segment(0);
  }

  /** The files this log has written, segment 0 first. */
  get files(): string[] {
    return this.segments.map((s) => s.file);
  }

  /**
   * Writes `row` (its document as `doc`, JSON) and returns the function that settles it once the
   * row is stored; undefined when it cannot be written (the caller waits for its commit instead).
   */
  record(row: RunRow, doc: string, kind: IntentKind = 'start'): (() => void) | undefined {
    if (this.failed || doc.length > INTENT_MAX_DOC_LENGTH) return undefined;
    const { doc: _doc, ...head } = row;
    // The epoch is written in once the segment is chosen: its digits take as many bytes as these zeros.
    const line = Buffer.from(`${'0'.repeat(EPOCH_WIDTH)}\t${KIND_LETTER[kind]}\t${JSON.stringify(head)}\t${doc}\n`);
    const segment = this.segmentFor(line.length);
    if (!segment) return undefined;
    line.write(segment.epoch.toString(16).padStart(EPOCH_WIDTH, '0'), 0, 'latin1');
    try {
      segment.fd ??= this.open(segment.file);
      // One positional write: the line is in the kernel's page cache when this returns.
      if (writeSync(segment.fd, line, 0, line.length, segment.end) !== line.length) throw new Error('short write');
    } catch {
      // A log that cannot be written (disk full, permissions) costs runs their commit's wait, never their record.
      this.failed = true;
      return undefined;
    }
    segment.end += line.length;
    segment.live++;
    let settled = false;
    return () => {
      if (settled) return;
      settled = true;
      if (--segment.live === 0) this.invalidate(segment);
    };
  }

  /** Removes this process's segments whose entries are all settled (shutdown); the others are left for the sweep. */
  close(): void {
    for (const s of this.segments) {
      if (s.fd === undefined) continue;
      closeSync(s.fd);
      s.fd = undefined;
      if (s.live === 0) unlinkQuietly(s.file);
    }
  }

  /**
   * The logs of processes not in `alive`: each run's last entry is handed to `restore` (which
   * stores the run as its kind says), then the log is removed. A log whose restore fails stays for
   * the next sweep.
   */
  async sweep(alive: Set<string>, restore: (run: RecordedRun) => Promise<boolean>): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(this.options.dir);
    } catch {
      return 0;
    }
    const logs = new Map<string, string[]>();
    for (const name of names) {
      if (!name.endsWith(SUFFIX)) continue;
      const replica = name.slice(0, -SUFFIX.length).split('.')[0];
      if (replica === this.options.replica || alive.has(replica)) continue;
      logs.set(replica, [...(logs.get(replica) ?? []), join(this.options.dir, name)]);
    }
    let restored = 0;
    for (const files of logs.values()) {
      const last = new Map<string, RecordedRun>();
      for (const run of readIntentLogs(files)) last.set(run.row.id, run);
      for (const run of last.values()) if (await restore(run)) restored++;
      for (const file of files) unlinkQuietly(file);
    }
    return restored;
  }

  /**
   * Where an entry of `bytes` goes: the current segment, started over if its entries are all
   * settled; once full, another whose entries are, or a new one; none once MAX_SEGMENTS are in use.
   */
  private segmentFor(bytes: number): Segment | undefined {
    let s = this.current;
    if (s.live > 0 && s.end + bytes > INTENT_SEGMENT_BYTES) {
      const free = this.segments.find((x) => x.live === 0);
      if (free) s = free;
      else if (this.segments.length < MAX_SEGMENTS) s = this.segment(this.segments.length);
      else return undefined;
      this.current = s;
    }
    if (s.live === 0) {
      s.end = 0;
      s.epoch = ++this.epoch;
    }
    return s.end + bytes <= INTENT_SEGMENT_BYTES ? s : undefined;
  }

  private segment(n: number): Segment {
    const s: Segment = { file: join(this.options.dir, `${this.options.replica}${n ? `.${n}` : ''}${SUFFIX}`), fd: undefined, end: 0, live: 0, epoch: 0 };
    this.segments.push(s);
    return s;
  }

  /** Every entry of `s` is settled: a first byte that starts no line leaves nothing to read. */
  private invalidate(s: Segment): void {
    if (s.fd === undefined) return;
    try {
      writeSync(s.fd, '#', 0);
    } catch {
      this.failed = true;
    }
  }

  private open(file: string): number {
    mkdirSync(this.options.dir, { recursive: true });
    return openSync(file, 'w');
  }
}

/** The entries of a log's segments in the order they were written: segments by epoch, each in its order. */
export function readIntentLogs(files: readonly string[]): RecordedRun[] {
  return files.map(readSegment).filter((s) => s.runs.length).sort((a, b) => a.epoch - b.epoch).flatMap((s) => s.runs);
}

/** The entries of one segment, in order: the lines of its first line's epoch, up to the first line that is not one. */
export function readIntentLog(file: string): RecordedRun[] {
  return readSegment(file).runs;
}

function readSegment(file: string): { epoch: number; runs: RecordedRun[] } {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const size = Math.min(fstatSync(fd).size, INTENT_LOG_MAX_BYTES);
      const buf = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const n = readSync(fd, buf, read, size - read, read);
        if (n === 0) break;
        read += n;
      }
      text = buf.toString('utf8', 0, read);
    } finally {
      closeSync(fd);
    }
  } catch {
    return { epoch: 0, runs: [] };
  }
  const runs: RecordedRun[] = [];
  let epoch: string | undefined;
  let at = 0;
  for (;;) {
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
  return { epoch: epoch === undefined ? 0 : parseInt(epoch, 16), runs };
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
