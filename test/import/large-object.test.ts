/**
 * A 200 MB object is copied with flat memory: `orrery import` runs as a child process (the CLI as
 * a user runs it), its peak resident size (VmHWM in /proc/<pid>/status) is read while it runs,
 * and must stay far below the object's size, so the bytes were streamed from the source's signed
 * URL to the target's store, never held whole. Once per test run (not per dialect): it moves
 * 600 MB of disk traffic.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { startTestServer, type TestServer } from '../support/server.ts';
import { ORRERY_CLI } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const SIZE = 200 * 1024 * 1024;
const CHUNK = 1024 * 1024;

/** 200 MB of bytes that are not all alike, made as they are sent. */
function* bytes(): Generator<Buffer> {
  const block = Buffer.alloc(CHUNK);
  for (let i = 0; i < SIZE / CHUNK; i++) {
    block.fill(i % 251);
    block.writeUInt32BE(i, 0);
    yield block;
  }
}

const peakKb = (pid: number): number | undefined => {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined; // the process has ended
  }
};

describe('orrery import: a 200 MB object', () => {
  let src: TestServer;
  let dst: TestServer;

  before(async () => {
    src = await startTestServer('sqlite');
    dst = await startTestServer('sqlite');
  });
  after(async () => {
    await dst?.close();
    await src?.close();
  });

  it('is streamed from source to target with flat memory in the import process', async () => {
    const up = await src.api('POST', '/api/v1/objects/upload-url', {
      name: 'big.bin',
      mime_type: 'application/octet-stream',
    });
    const put = await fetch(up.body.url, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(SIZE) },
      body: Readable.toWeb(Readable.from(bytes())) as never,
      duplex: 'half',
    } as RequestInit);
    assert.equal(put.status, 200, await put.text());
    const created = await src.api('POST', '/api/v1/objects', {
      name: 'big.bin',
      content: { source: up.body.id, type: 'application/octet-stream', name: 'big.bin' },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));

    const child = spawn(
      process.execPath,
      [
        ...ORRERY_CLI,
        'import',
        '--from',
        src.url,
        '--key',
        src.adminKey,
        '--to',
        dst.url,
        '--to-key',
        dst.adminKey,
        '--include',
        'objects',
      ],
      {
        cwd: ROOT,
        env: { ...process.env, NODE_OPTIONS: '', ORRERY_LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let peak = 0;
    // The peak before the first byte: the CLI with its modules loaded (the whole server's
    // module graph, under tsx: ~180 MB here), read when the import says it starts on objects.
    let before = 0;
    child.stdout.on('data', (d) => {
      out += d;
      if (!before && /^objects: 0\b/m.test(out)) before = peakKb(child.pid!) ?? 0;
    });
    child.stderr.on('data', (d) => (out += d));
    const sampler = setInterval(() => (peak = Math.max(peak, peakKb(child.pid!) ?? 0)), 25);
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    clearInterval(sampler);
    assert.equal(code, 0, out);
    assert.match(out, /objects\s+copied 1, skipped 0 \(unchanged\), failed 0, 200 MiB/, out);
    assert.ok(before > 0 && peak >= before, `the peaks were measured (${before}, ${peak} kB)`);
    const grewMb = (peak - before) / 1024;
    // Holding the object would add 200 MB (and did, before the copy used undici's streams).
    assert.ok(
      grewMb < 80,
      `the import's peak RSS grew by ${grewMb.toFixed(0)} MB while copying 200 MB (from ${(before / 1024).toFixed(0)} MB)\n${out}`,
    );

    const [copy] = (await dst.api('GET', '/api/v1/objects')).body;
    const full = (await dst.api('GET', `/api/v1/objects/${copy.id}`)).body;
    const there = await dst.api('POST', '/api/v1/objects/download-url', { file: full.content.source });
    assert.ok(there.body.url, JSON.stringify(there.body));
    // Both stores name a file by the SHA-256 of its bytes (the content etag): equal etags, equal bytes.
    assert.match(created.body.content.etag, /^[0-9a-f]{64}$/);
    assert.equal(full.content.etag, created.body.content.etag, 'the copy has the same bytes');
    const head = await fetch(there.body.url, { method: 'HEAD' });
    assert.equal(Number(head.headers.get('content-length')), SIZE);
    console.log(
      `# import of 200 MB: peak RSS ${(before / 1024).toFixed(0)} MB before, ${(peak / 1024).toFixed(0)} MB after`,
    );
  });
});
