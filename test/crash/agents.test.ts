/**
 * The crash test of agents: the server is killed (SIGKILL) while an agent is inside a tool call;
 * a new process on the same data resumes the agent after its last completed step: its first
 * model call and its first tool call are not run again, the tool call in flight runs once more,
 * and the agent completes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startServerProcess, until, type ServerProcess } from '../support/processes.ts';

const KEY = `sk-${'agent'.repeat(8)}`;
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: kill -9 in the middle of an agent`, () => {
    it('resumes after the last completed step, which never runs again', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-agent-crash-'));
      const pgdb = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      const env: Record<string, string> = {
        ORRERY_DATA_DIR: dataDir,
        ORRERY_ADMIN_KEY: KEY,
        ORRERY_SECRET: 'crash-test-secret-0123456789',
        ...(pgdb ? { ORRERY_DATABASE_URL: pgdb.url } : {}),
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
        const seed = async (name: string, model: string, content: string, schema?: unknown) => {
          const e = await api('POST', '/environments', { name: `env-${name}`, provider: 'test', default_model: model });
          const ix = await api('POST', '/interactions', {
            name,
            status: 'draft',
            environment: e.body.id,
            prompts: [{ type: 'template', template: { role: 'user', content, content_type: 'handlebars' } }],
            ...(schema ? { interaction_schema: schema } : {}),
          });
          assert.equal(ix.status, 200, JSON.stringify(ix.body));
        };
        await seed('Planner', 'tools', 'Plan a trip to {{city}}');
        await seed('Fast', 'echo', 'Fast {{city}}', SCHEMA);
        await seed('Slow', 'slow:4000', 'Slow {{city}}', SCHEMA);
        const start = await api('POST', '/execute/async', {
          type: 'conversation',
          interaction: 'Planner',
          data: { city: 'Kyiv' },
          tool_names: ['Fast', 'Slow'],
        });
        assert.equal(start.status, 200, JSON.stringify(start.body));
        const id: string = start.body.runId;
        const kids = async () =>
          (await api('GET', `/runs?parent=${id}&limit=100`)).body as Array<{
            id: string;
            status: string;
            interaction: { name: string };
          }>;
        // The crash comes while the slow tool runs: the model call and the fast tool are done.
        await until('the slow tool call to be under way', async () =>
          (await kids()).some((k) => k.interaction.name === 'Slow') ? true : undefined,
        );
        await server.kill();

        server = await startServerProcess(env);
        const run = await until(
          'the agent to end after the restart',
          async () => {
            const r = await api('GET', `/runs/${id}`);
            return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
          },
          120_000,
        );
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        const text = run.result.map((r: { value: string }) => r.value).join('');
        assert.match(text, /^Fast: Fast /m);
        assert.match(text, /^Slow: Slow /m);
        const names = (await kids()).map((k) => k.interaction.name);
        const count = (n: string) => names.filter((x) => x === n).length;
        assert.equal(count('Planner'), 2, `two model calls, the first not repeated: ${names.join(',')}`);
        assert.equal(count('Fast'), 1, 'the completed tool call is not repeated');
        assert.equal(count('Slow'), 2, 'the tool call in flight at the crash ran once more');
        await server.stop();
        server = undefined;

        const steps = await readSteps(dataDir, pgdb?.url, id);
        assert.deepEqual(
          steps.map((s) => [s.kind, s.status, s.attempts]),
          [
            ['model', 'done', 1],
            ['tool', 'done', 1],
            ['tool', 'done', 2],
            ['model', 'done', 1],
          ],
        );
        assert.equal(new Set(steps.map((s) => s.key)).size, 4, 'each step has its own idempotency key');
      } finally {
        await server?.kill();
        await pgdb?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}

type Step = { kind: string; status: string; attempts: number; key: string };

async function readSteps(dataDir: string, url: string | undefined, id: string): Promise<Step[]> {
  const q = 'SELECT kind, status, attempts, idempotency_key AS key FROM agent_steps WHERE run_id = $1 ORDER BY seq';
  if (!url) {
    const db = new Database(join(dataDir, 'orrery.db'), { readonly: true });
    try {
      return (db.prepare(q.replace('$1', '?')).all(id) as Step[]).map((s) => ({ ...s, attempts: Number(s.attempts) }));
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(q, [id])).rows.map((s) => ({ ...s, attempts: Number(s.attempts) }));
  } finally {
    await client.end();
  }
}
