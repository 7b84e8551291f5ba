/**
 * Content work runs in child processes (issue 22): what the pool promises (worker/pool.ts) holds
 * for processes, and the server's own process never loads the content libraries.
 *
 * - a task past its deadline kills its process (`step_timeout`, its pid gone), the next task works;
 * - a process killed from outside mid-task (SIGKILL) fails that task and the pool recovers;
 * - a task that exhausts a process's heap fails with `memory_limit`, the next task works;
 * - an aborted task kills its process;
 * - an object's bytes are copied to a process once for all its steps;
 * - a server (its own process, from the sources) that processed a PNG, a PDF and a WAV through
 *   HTTP, and counted tokens for the Anthropic door's count_tokens, has not loaded sharp, pdf.js,
 *   canvas, music-metadata or the tokenizer, nor mapped libvips or skia, while its worker processes
 *   did; nor the MCP SDK (with zod) or nodemailer, which only an MCP request or a mail loads.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkerPool } from '../../src/content/worker/pool.ts';
import type { ContentLimits } from '../../src/content/limits.ts';
import { alive, gone, startServerProcess, type ServerProcess } from '../support/processes.ts';
import { makePdf, makePng, makeWav } from './helpers.ts';

const LIMITS: ContentLimits = {
  maxPages: 100_000,
  maxDecompressedBytes: 64 << 20,
  maxImagePixels: 50_000_000,
  maxInputBytes: 64 << 20,
  stepTimeoutMs: 60_000,
  workerMemoryMb: 512,
};

const count = (pool: WorkerPool, text: string, ms = 30_000) => pool.run<number>({ op: 'countTokens', text }, ms);
const extractPdf = async (pool: WorkerPool, bytes: Buffer, ms: number, signal?: AbortSignal) =>
  pool.run<{ text: string }>(
    { op: 'extract', family: 'pdf', mime: 'application/pdf', bytes, limits: LIMITS },
    ms,
    signal,
  );

describe('content worker processes', () => {
  let slowPdf: Buffer;
  before(async () => {
    slowPdf = await makePdf(2000);
  });

  it('a task past its deadline kills its process (step_timeout); the next task gets a fresh one', async () => {
    const pool = new WorkerPool({ size: 1, memoryMb: 512 });
    try {
      assert.ok((await count(pool, 'warm up')) > 0);
      const [pid] = pool.pids;
      const err = await extractPdf(pool, slowPdf, 300).then(
        () => null,
        (e) => e,
      );
      assert.equal(err?.code, 'step_timeout', String(err));
      assert.match(err.message, /longer than 300 ms/);
      assert.ok(await gone(pid), `process ${pid} killed`);
      assert.ok((await count(pool, 'next one')) > 0, 'the next task works');
      assert.notEqual(pool.pids[0], pid);
    } finally {
      await pool.close();
    }
  });

  it('a process killed mid-task fails that task (corrupt_file, not a hang) and the pool recovers', async () => {
    const pool = new WorkerPool({ size: 1, memoryMb: 512 });
    try {
      assert.ok((await count(pool, 'warm up')) > 0);
      const [pid] = pool.pids;
      const task = extractPdf(pool, slowPdf, 60_000).then(
        () => null,
        (e) => e,
      );
      await sleep(200);
      process.kill(pid, 'SIGKILL');
      const err = await task;
      assert.equal(err?.code, 'corrupt_file', String(err));
      assert.match(err.message, /SIGKILL/);
      assert.ok(await gone(pid));
      assert.ok((await count(pool, 'after the crash')) > 0, 'the next task works');
      assert.equal(pool.processes, 1);
      assert.notEqual(pool.pids[0], pid);
    } finally {
      await pool.close();
    }
  });

  it('a task that exhausts the heap limit fails with memory_limit; the next task works', async () => {
    const pool = new WorkerPool({ size: 1, memoryMb: 64 });
    try {
      assert.ok((await count(pool, 'warm up')) > 0, 'the libraries load within 64 MB');
      const [pid] = pool.pids;
      // Well past the 64 MB heap even for the compiled worker (no TypeScript loader in its heap):
      // 2 million words fit, 3 million do not; twice that, so that a leaner tokenizer still fails.
      const huge = Array.from({ length: 6_000_000 }, (_, i) => `w${(i * 7919) % 100_000}`).join(' ');
      const err = await count(pool, huge, 120_000).then(
        () => null,
        (e) => e,
      );
      assert.equal(err?.code, 'memory_limit', String(err));
      assert.ok(await gone(pid));
      assert.ok((await count(pool, 'still here')) > 0);
    } finally {
      await pool.close();
    }
  });

  it("an object's bytes go to a process once: the next task with the same input is sent without them", async () => {
    const pool = new WorkerPool({ size: 1, memoryMb: 512 });
    const sent: Array<{ op: string; bytes: boolean; held?: number }> = [];
    // Every message the pool sends to its processes, seen at the processes' send().
    const spawn = (WorkerPool.prototype as any).spawn;
    (pool as any).spawn = function (this: WorkerPool) {
      const slot = spawn.call(this);
      const send = slot.child.send.bind(slot.child);
      slot.child.send = (msg: any, ...rest: any[]) => {
        sent.push({ op: msg.op, bytes: msg.bytes !== undefined, held: msg.held });
        return send(msg, ...rest);
      };
      return slot;
    };
    try {
      const png = await makePng(640, 480);
      const facts = await pool.run<any>(
        { op: 'probe', family: 'image', mime: 'image/png', bytes: png, limits: LIMITS },
        30_000,
      );
      assert.deepEqual(facts.dimensions, { width: 640, height: 480 });
      const drawn = await pool.run<any[]>(
        {
          op: 'renditions',
          family: 'image',
          bytes: png,
          specs: [
            { format: 'jpeg', maxHw: 256 },
            { format: 'png', maxHw: 64 },
          ],
          limits: LIMITS,
        },
        30_000,
      );
      assert.deepEqual(
        drawn.map((d) => [d.width, d.height]),
        [
          [256, 192],
          [64, 48],
        ],
      );
      const other = await makePng(100, 50);
      const facts2 = await pool.run<any>(
        { op: 'probe', family: 'image', mime: 'image/png', bytes: other, limits: LIMITS },
        30_000,
      );
      assert.deepEqual(facts2.dimensions, { width: 100, height: 50 }, 'another input is sent, not the held one used');
      assert.deepEqual(
        sent.map((m) => [m.op, m.bytes]),
        [
          ['probe', true],
          ['renditions', false],
          ['probe', true],
        ],
      );
      assert.equal(sent[0].held, sent[1].held);
      assert.notEqual(sent[2].held, sent[1].held);
    } finally {
      await pool.close();
    }
  });

  it('an aborted task kills its process at once; close() ends them all', async () => {
    const pool = new WorkerPool({ size: 2, memoryMb: 512 });
    try {
      await Promise.all([count(pool, 'a'), count(pool, 'b')]);
      const pids = pool.pids;
      assert.equal(pids.length, 2);
      const ac = new AbortController();
      const task = extractPdf(pool, slowPdf, 60_000, ac.signal).then(
        () => null,
        (e) => e,
      );
      await sleep(100);
      ac.abort(new Error('shutting down'));
      // Rejected with the abort's reason: a task that ran on would resolve (or fail otherwise).
      const err = await task;
      assert.equal(err?.message, 'shutting down');
      for (const until = Date.now() + 5000; pool.processes > 1 && Date.now() < until;) await sleep(20);
      assert.equal(pool.processes, 1, 'the busy process was killed, the idle one stays');
      assert.equal(pids.filter(alive).length, 1);
      await pool.close();
      for (const pid of pids) assert.ok(await gone(pid), `process ${pid} ended by close()`);
      await assert.rejects(count(pool, 'too late'), /closed/);
    } finally {
      await pool.close();
    }
  });
});

/** The ids of `pid`'s child processes. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

const NATIVE = /libvips|sharp-linux|skia\.|canvas/;
const mapped = (pid: number) => [
  ...new Set(
    readFileSync(`/proc/${pid}/maps`, 'utf8')
      .split('\n')
      .map((l) => l.split(/\s+/)[5])
      .filter((f) => f && NATIVE.test(f)),
  ),
];

/**
 * Loaded before the server's code: records every content library the server's process resolves
 * (module hooks apply to the process that registers them; the worker processes are forked
 * without them).
 */
const HOOKS = `import { appendFileSync } from 'node:fs';
const LOG = process.env.H22_RESOLVE_LOG;
const WATCHED = /^(sharp|unpdf|pdfjs-dist|@napi-rs\\/canvas|music-metadata|mammoth|officeparser|postal-mime|gpt-tokenizer|@modelcontextprotocol\\/sdk|nodemailer|zod)(\\/|$)/;
export async function resolve(specifier, context, next) {
  if (WATCHED.test(specifier)) appendFileSync(LOG, specifier + '\\n');
  return next(specifier, context);
}
`;

describe('the server process', () => {
  let dir: string;
  let server: ServerProcess;
  let url: string;
  const key = 'sk-child-process-test-key-0001';
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-child-process-'));
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
    writeFileSync(
      join(dir, 'watch.mjs'),
      `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
    );
    writeFileSync(join(dir, 'resolved.log'), '');
    server = await startServerProcess(
      {
        NODE_OPTIONS: '',
        NODE_TEST_CONTEXT: '',
        ORRERY_ADMIN_KEY: key,
        ORRERY_DATA_DIR: join(dir, 'data'),
        H22_RESOLVE_LOG: join(dir, 'resolved.log'),
      },
      ['--import', join(dir, 'watch.mjs')],
    );
    url = server.url;
  });

  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('processes a PNG, a PDF and a WAV through HTTP without loading sharp, pdf.js, canvas or music-metadata', async () => {
    const files: [string, Buffer][] = [
      ['photo.png', await makePng(1200, 800)],
      ['report.pdf', await makePdf(3)],
      ['tone.wav', makeWav(1)],
    ];
    const ids: string[] = [];
    for (const [name, bytes] of files) {
      const up = await api('POST', '/api/v1/objects/upload-url', { name });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const put = await fetch(up.body.url, { method: 'PUT', body: bytes });
      assert.equal(put.status, 200);
      await put.arrayBuffer();
      const created = await api('POST', '/api/v1/objects', { name, content: { source: up.body.id } });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      ids.push(created.body.id);
    }
    for (const id of ids) {
      let obj: any;
      for (const until = Date.now() + 60_000; ; await sleep(100)) {
        obj = (await api('GET', `/api/v1/objects/${id}`)).body;
        if (obj.status === 'ready' || obj.status === 'failed' || Date.now() > until) break;
      }
      assert.equal(obj.status, 'ready', JSON.stringify(obj.error ?? obj.status));
      if (obj.metadata.type === 'image' || obj.metadata.type === 'document')
        assert.equal(obj.metadata.renditions?.length, 2, `${obj.name}: renditions`);
    }
    // The check can see the libraries: the worker processes (alive for 10 s after their last task) mapped them.
    const workers = childrenOf(server.proc.pid!);
    assert.ok(workers.length >= 1, 'the server has worker processes');
    assert.ok(
      workers.some((pid) => mapped(pid).some((f) => /libvips/.test(f))),
      'a worker process mapped libvips',
    );
    assert.ok(
      workers.some((pid) => mapped(pid).some((f) => /skia/.test(f))),
      'a worker process mapped skia (canvas)',
    );
    // count_tokens counts in a worker process too: the tokenizer's tables (about 70 MB) stay out of the server.
    const env = await api('POST', '/api/v1/environments', { name: 'counted', provider: 'test' });
    assert.equal(env.status, 200, JSON.stringify(env.body));
    const counted = await fetch(`${url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'counted/any', messages: [{ role: 'user', content: 'Hello there' }] }),
    });
    assert.equal(counted.status, 200, await counted.clone().text());
    assert.ok(((await counted.json()) as { input_tokens: number }).input_tokens > 3);
    assert.deepEqual(mapped(server.proc.pid!), [], 'the server maps no content library');
    assert.equal(readFileSync(join(dir, 'resolved.log'), 'utf8'), '', 'the server resolved no content library');
  });
});
