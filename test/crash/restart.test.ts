/**
 * A single node restarted after a crash: the runs its dead process left `processing` are failed
 * (`executor_lost`) before the new process answers its first request, not once the dead process's
 * heartbeat times out (ORRERY_REPLICA_TIMEOUT is left at its default of 30 s here).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startServerProcess, until, type ServerProcess } from '../support/processes.ts';

const KEY = `sk-${'restart'.repeat(4)}`;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: a single node restarted after kill -9`, () => {
    it('fails the runs its dead process was executing before it answers', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-restart-'));
      const pg = dialect === 'postgres' ? await createPgDatabase() : undefined;
      const env: Record<string, string> = {
        ORRERY_DATA_DIR: dataDir,
        ORRERY_ADMIN_KEY: KEY,
        ORRERY_SECRET: 'restart-test-secret-0123456789',
        ...(pg ? { ORRERY_DATABASE_URL: pg.url } : {}),
      };
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(env);
        const api = async (method: string, path: string, body?: unknown) => {
          const r = await fetch(`${server!.url}/api/v1${path}`, {
            method,
            headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          });
          return { status: r.status, body: (await r.json()) as any };
        };
        const slow = (
          await api('POST', '/environments', {
            name: 'slow',
            provider: 'test',
            default_model: 'echo',
            config: { chunk_delay_ms: 500 },
          })
        ).body.id;
        const ix = (
          await api('POST', '/interactions', {
            name: 'Long answer',
            status: 'draft',
            environment: slow,
            prompts: [
              { type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } },
            ],
          })
        ).body.id;
        const run = (
          await api('POST', '/runs', {
            interaction: ix,
            data: { text: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ') },
            stream: true,
          })
        ).body;
        const res = await fetch(`${server.url}/api/v1/runs/${run.id}/stream`, {
          headers: { authorization: `Bearer ${KEY}` },
        });
        const reader = res.body!.getReader();
        await reader.read(); // the first chunk: the run is executing
        // Its row says so once the writer has stored that (on SQLite a moment after the first chunk,
        // on a loaded machine later): the dead process must leave a `processing` row behind.
        await until('the run to be stored as processing', async () =>
          (await api('GET', `/runs/${run.id}`)).body.status === 'processing' ? true : undefined,
        );

        await server.kill();
        await reader.cancel().catch(() => {});
        server = await startServerProcess(env);

        const after = (await api('GET', `/runs/${run.id}`)).body;
        assert.equal(after.status, 'failed', 'failed at start, not left processing for the replica timeout');
        assert.equal(after.error.code, 'executor_lost');
        assert.deepEqual((await api('GET', '/runs?status=processing')).body, []);
      } finally {
        await server?.stop();
        await pg?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
