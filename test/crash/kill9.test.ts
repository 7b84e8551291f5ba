/**
 * Issue 14, the crash test: the server process is killed (SIGKILL, as a crashed machine) while
 * runs stream, an upload is half sent and content is being processed; a new process on the same
 * data then shows that nothing acknowledged is lost, nothing stays `processing`, processing
 * resumes, and no temporary upload file remains.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'node:http';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startServerProcess, until, type ServerProcess } from '../support/processes.ts';

const KEY = `sk-${'crash'.repeat(8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function tempUploads(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('~orrery-upload')) out.push(full);
    }
  };
  try {
    walk(join(dir, 'blobs'));
  } catch {
    /* no blob folder yet */
  }
  return out;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: kill -9 during streamed runs, uploads and content processing`, () => {
    it('loses nothing acknowledged, leaves nothing processing and no temporary file', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-crash-'));
      const pg = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      const env: Record<string, string> = {
        ORRERY_DATA_DIR: dataDir,
        ORRERY_ADMIN_KEY: KEY,
        ORRERY_SECRET: 'crash-test-secret-0123456789',
        ORRERY_REPLICA_TIMEOUT: '2',
        ORRERY_UPLOAD_STALE: '1',
        ORRERY_JOB_LEASE: '1',
        ORRERY_CONTENT_WORKERS: '1',
        ...(pg ? { ORRERY_DATABASE_URL: pg.url } : {}),
      };
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(env);
        const base = `${server.url}/api/v1`;
        const api = async (method: string, path: string, body?: unknown) => {
          const r = await fetch(base + path, {
            method,
            headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          });
          return { status: r.status, body: (await r.json()) as any };
        };
        const slowEnv = (
          await api('POST', '/environments', {
            name: 'slow',
            provider: 'test',
            default_model: 'echo',
            config: { chunk_delay_ms: 300 },
          })
        ).body.id;
        const fastEnv = (await api('POST', '/environments', { name: 'fast', provider: 'test', default_model: 'echo' }))
          .body.id;
        const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
        const ix = (
          await api('POST', '/interactions', {
            name: 'Long answer',
            status: 'draft',
            environment: slowEnv,
            prompts: [
              { type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } },
            ],
          })
        ).body.id;

        // Acknowledged before the crash: blocking runs, and objects with content being processed.
        const acknowledgedRuns: string[] = [];
        for (let i = 0; i < 4; i++) {
          const r = await api('POST', '/runs', {
            interaction: ix,
            data: { text: `quick ${i}` },
            config: { environment: fastEnv },
          });
          assert.equal(r.status, 200);
          acknowledgedRuns.push(r.body.id);
        }
        const acknowledgedObjects: string[] = [];
        for (let i = 0; i < 3; i++) {
          const up = await api('POST', '/objects/upload-url', { name: `note${i}.txt` });
          assert.equal(
            (
              await fetch(up.body.url, {
                method: 'PUT',
                body: `note ${i} `.repeat(2000),
                headers: { 'content-type': 'text/plain' },
              })
            ).status,
            200,
          );
          const o = await api('POST', '/objects', { name: `Note ${i}`, content: { source: up.body.id } });
          assert.equal(o.status, 200);
          acknowledgedObjects.push(o.body.id);
        }

        // In flight at the crash: three streamed runs, executing, and a half-sent upload.
        const streamed: string[] = [];
        const readers: Array<Promise<unknown>> = [];
        for (let i = 0; i < 3; i++) {
          const run = await api('POST', '/runs', { interaction: ix, data: { text: words }, stream: true });
          streamed.push(run.body.id);
          const res = await fetch(`${base}/runs/${run.body.id}/stream`, {
            headers: { authorization: `Bearer ${KEY}` },
          });
          const reader = res.body!.getReader();
          await reader.read(); // the first chunk: the run is executing
          readers.push(
            reader
              .read()
              .then(() => reader.cancel())
              .catch(() => {}),
          );
        }
        const big = await api('POST', '/objects/upload-url', { name: 'big.bin' });
        const url = new URL(big.body.url);
        const put = request({
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream', 'content-length': String(50 * 1024 * 1024) },
        });
        put.on('error', () => {});
        const body = Readable.from(
          (async function* () {
            for (let i = 0; i < 4; i++) yield Buffer.alloc(1024 * 1024, i);
            await sleep(60_000); // never finishes: the process dies first
          })(),
        );
        body.pipe(put);
        await until('the upload to be half written', async () => (tempUploads(dataDir).length ? true : undefined));
        assert.equal((await api('GET', `/runs/${streamed[0]}`)).body.status, 'processing');

        await server.kill();
        await Promise.all(readers);
        put.destroy();
        server = await startServerProcess(env);
        const base2 = `${server.url}/api/v1`;
        const api2 = async (path: string) => {
          const r = await fetch(base2 + path, { headers: { authorization: `Bearer ${KEY}` } });
          return { status: r.status, body: (await r.json()) as any };
        };

        // Nothing acknowledged is lost.
        for (const id of acknowledgedRuns) {
          const r = await api2(`/runs/${id}`);
          assert.equal(r.status, 200);
          assert.equal(r.body.status, 'completed');
        }
        // The runs executing at the crash end failed (executor_lost), none stays processing.
        for (const id of streamed) {
          const run = await until(`run ${id} to end`, async () => {
            const r = (await api2(`/runs/${id}`)).body;
            return r.status === 'processing' ? undefined : r;
          });
          assert.equal(run.status, 'failed');
          assert.equal(run.error.code, 'executor_lost');
        }
        assert.deepEqual((await api2('/runs?status=processing')).body, []);
        // Objects are all there, and their processing resumed to an end.
        for (const id of acknowledgedObjects) {
          const obj = await until(`object ${id} to be processed`, async () => {
            const r = await api2(`/objects/${id}`);
            assert.equal(r.status, 200);
            return ['ready', 'failed'].includes(r.body.status) ? r.body : undefined;
          });
          assert.equal(obj.status, 'ready', JSON.stringify(obj.error));
          assert.equal((await api2(`/objects/${id}/text`)).body.text.startsWith('note'), true);
        }
        // The half-sent upload left no temporary file and no blob.
        await until('the temporary upload file to be swept', async () =>
          tempUploads(dataDir).length === 0 ? true : undefined,
        );
        const meta = await api2(`/files/metadata?file=${encodeURIComponent(big.body.id)}`);
        assert.equal(meta.status, 404);
      } finally {
        await server?.stop();
        await pg?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
