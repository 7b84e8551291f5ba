/**
 * SQLite reader threads: heavy reads (find and count queries, collection member listings, run
 * searches) run on a small pool of worker threads, each with a read-only connection to the same
 * WAL database, so that a costly query blocks one of those threads instead of the HTTP thread, and
 * `/health` and other projects keep answering meanwhile.
 *
 * The HTTP thread compiles the query (Kysely's `compile()`) and sends its SQL and parameters; the
 * thread answers its rows. A `Kysely` over the pool (`readerDb`) makes that invisible to the code
 * that builds queries: what runs through it runs on a reader thread.
 *
 * Read-your-writes: a WAL reader sees every transaction committed before its statement starts.
 * Writes of this thread's connection are committed before their request is answered, and the run
 * read barrier (runs/read-barrier.ts) holds a request until the runs answered before it are
 * committed by the run writer, so a read that starts after a write was acknowledged sees it. A
 * read inside a transaction of this thread's connection never comes here (db/read-budget.ts).
 *
 * Budget: the thread stops a query past its deadline or its byte budget (sqlite-reader-worker.mjs).
 * A statement that checks neither (one huge row) is ended from here: past its deadline and a grace
 * the thread is terminated (a reader holds nothing to lose) and a fresh one takes its place.
 */
import { Worker } from 'node:worker_threads';
import {
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely';

const ENTRY = new URL('./sqlite-reader-worker.mjs', import.meta.url);

/** How long past its deadline a statement may run before its thread is terminated. */
const TERMINATE_GRACE_MS = 1000;
/** Page cache of each reader thread, KiB. */
const READER_CACHE_KIB = 32_768;

/** Which bound a query passed. */
export type ReadBudget = 'time' | 'bytes';

/** A query stopped by its budget on a reader thread. */
export class ReadBudgetExceeded extends Error {
  constructor(readonly budget: ReadBudget) {
    super(`the query passed its ${budget} budget`);
  }
}

interface Job {
  id: number;
  sql: string;
  parameters: readonly unknown[];
  timeoutMs: number;
  maxReadBytes: number;
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

interface Reader {
  worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

type WorkerMessage =
  { ready: true } | { id: number; rows?: unknown[]; error?: { message: string; code?: string; budget?: ReadBudget } };

export interface SqliteReadersOptions {
  /** Threads, at least 1. */
  size: number;
  /** Bytes of documents one query may read (ORRERY_QUERY_MAX_READ). */
  maxReadBytes: number;
}

export class SqliteReaders {
  private readonly readers: Reader[] = [];
  private readonly queue: Job[] = [];
  private seq = 0;
  private closed = false;
  private readonly dbs = new Map<number, Kysely<never>>();

  constructor(
    private readonly file: string,
    private readonly options: SqliteReadersOptions,
  ) {}

  get size(): number {
    return this.options.size;
  }

  /** Queries running on a thread now. */
  get busy(): number {
    return this.readers.filter((r) => r.job).length;
  }

  /** Runs one compiled read on a reader thread, stopped past `timeoutMs` (ReadBudgetExceeded). */
  all(query: CompiledQuery, timeoutMs: number): Promise<unknown[]> {
    if (this.closed) return Promise.reject(new Error('the SQLite reader threads are closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({
        id: ++this.seq,
        sql: query.sql,
        parameters: query.parameters,
        timeoutMs,
        maxReadBytes: this.options.maxReadBytes,
        resolve,
        reject,
      });
      this.pump();
    });
  }

  /** A Kysely whose queries run on the reader threads with this time budget (reads only, no transactions). */
  db<D>(timeoutMs: number): Kysely<D> {
    let db = this.dbs.get(timeoutMs);
    if (!db) {
      db = new Kysely<never>({ dialect: new ReaderDialect(this, timeoutMs) });
      this.dbs.set(timeoutMs, db);
    }
    return db as unknown as Kysely<D>;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('the SQLite reader threads closed'));
    await Promise.all(this.readers.splice(0).map((r) => this.end(r, 'closed')));
  }

  private pump(): void {
    while (this.queue.length) {
      let reader = this.readers.find((r) => r.ready && !r.job);
      if (!reader) {
        if (this.readers.length < this.options.size) this.start();
        return;
      }
      const job = this.queue.shift()!;
      reader.job = job;
      reader.worker.ref();
      reader.timer = setTimeout(() => this.overrun(reader!), job.timeoutMs + TERMINATE_GRACE_MS);
      reader.timer.unref();
      const { id, sql, parameters, timeoutMs, maxReadBytes } = job;
      try {
        reader.worker.postMessage({ id, sql, parameters, timeoutMs, maxReadBytes });
      } catch (err) {
        this.finish(reader);
        job.reject(err);
        reader = undefined;
      }
    }
  }

  private start(): void {
    const worker = new Worker(ENTRY, {
      workerData: { file: this.file, cacheKiB: READER_CACHE_KIB },
      execArgv: [],
    });
    const reader: Reader = { worker, ready: false };
    this.readers.push(reader);
    worker.unref();
    worker.on('message', (msg: WorkerMessage) => {
      if ('ready' in msg) {
        reader.ready = true;
        return this.pump();
      }
      const job = reader.job;
      if (!job || job.id !== msg.id) return;
      this.finish(reader);
      if (msg.error) {
        const e = msg.error;
        job.reject(
          e.budget
            ? new ReadBudgetExceeded(e.budget)
            : Object.assign(new Error(e.message), e.code ? { code: e.code } : {}),
        );
      } else job.resolve((msg.rows ?? []).map(asBuffers));
      this.pump();
    });
    const stopped = (why: string) => {
      const i = this.readers.indexOf(reader);
      if (i < 0) return;
      this.readers.splice(i, 1);
      const job = reader.job;
      this.finish(reader);
      job?.reject(new Error(`a SQLite reader thread stopped (${why})`));
      // A thread that cannot start fails what waits for it rather than being started again and again.
      if (!reader.ready)
        for (const j of this.queue.splice(0)) j.reject(new Error(`a SQLite reader thread stopped (${why})`));
      else if (!this.closed) this.pump();
    };
    worker.on('error', (err) => stopped(err.message));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
  }

  /** A statement that ran past its deadline without stopping itself: its thread is ended, the query answered as over budget. */
  private overrun(reader: Reader): void {
    const job = reader.job;
    const i = this.readers.indexOf(reader);
    if (!job || i < 0) return;
    this.readers.splice(i, 1);
    this.finish(reader);
    job.reject(new ReadBudgetExceeded('time'));
    void reader.worker.terminate();
    this.pump();
  }

  private finish(reader: Reader): void {
    reader.job = undefined;
    if (reader.timer) clearTimeout(reader.timer);
    reader.timer = undefined;
    reader.worker.unref();
  }

  private async end(reader: Reader, why: string): Promise<void> {
    const job = reader.job;
    this.finish(reader);
    job?.reject(new Error(`the SQLite reader threads ${why}`));
    await reader.worker.terminate();
  }
}

/** Blobs arrive from a thread as Uint8Array; the code that reads rows expects Buffers, as on this thread. */
function asBuffers(row: unknown): unknown {
  if (!row || typeof row !== 'object') return row;
  const r = row as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    const v = r[k];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v)) r[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return r;
}

class ReaderDialect implements Dialect {
  constructor(
    private readonly pool: SqliteReaders,
    private readonly timeoutMs: number,
  ) {}
  createAdapter() {
    return new SqliteAdapter();
  }
  createDriver(): Driver {
    return new ReaderDriver(this.pool, this.timeoutMs);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}

class ReaderDriver implements Driver {
  private readonly connection: DatabaseConnection;

  constructor(pool: SqliteReaders, timeoutMs: number) {
    this.connection = {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => ({
        rows: (await pool.all(query, timeoutMs)) as R[],
      }),
      // eslint-disable-next-line require-yield
      streamQuery: async function* () {
        throw new Error('the SQLite reader threads do not stream');
      },
    };
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }
  async beginTransaction(): Promise<void> {
    throw new Error('the SQLite reader threads run no transactions: read on the database itself');
  }
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** The reader threads of a database's Kysely instance (db/open.ts attaches them). */
const attached = new WeakMap<object, SqliteReaders>();

export function attachReaders(db: object, readers: SqliteReaders): void {
  attached.set(db, readers);
}

export function readersOf(db: object): SqliteReaders | undefined {
  return attached.get(db);
}
