/**
 * What `npm start` runs: the compiled build (dist/, made by `npm ci` / `npm install` through the
 * `prepare` script) under plain node, with no TypeScript loader. The server starts on a fresh data
 * folder, executes a run on the test provider through HTTP (its handlebars prompt is compiled in
 * a template worker thread; on SQLite with two cores the run is written by the run writer thread)
 * and processes an uploaded PDF (text extraction in a content worker process): every worker's entry
 * file is proven to load from dist/. A build older than the sources is rebuilt first, so a local
 * run tests the code as it is.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/free-port.mjs';
import { startOptionsOf } from '../../scripts/start-options.mjs';
import { TEST_DIALECTS, createPgDatabase, startTestServer } from '../support/server.ts';
import { makePdf } from '../content/helpers.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLI = join(ROOT, 'dist', 'cli.js');
const ADMIN_KEY = 'sk-compiled-build-test-key-0001';
/** The node options of `npm start` (package.json: `node <options> dist/cli.js serve`). */
const START_OPTIONS = ((): string[] => {
  const options = startOptionsOf(ROOT);
  if (!options) throw new Error('package.json\'s start script is not "node [options] dist/cli.js serve"');
  return options;
})();

const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs),
    0,
  );

/**
 * The repository's sources, not the test build's mirror of them (scripts/test-build.mjs): the
 * mirror's src/ holds .js files compiled for this `npm test`, always newer than dist/, which made
 * every run rebuild dist/ (tsc, twice a run) under the other test files still using it.
 */
const SOURCES = join(process.env.ORRERY_TEST_ROOT ?? ROOT, 'src');

function ensureBuild(): void {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newest(SOURCES)) return;
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'pipe' });
}

interface Started {
  url: string;
  proc: ChildProcess;
  output(): string;
  startMs: number;
  stop(): Promise<void>;
}

/**
 * A module for `--import` that refuses to resolve tsx or any .ts file in the server's main thread
 * (worker threads do not inherit it: the build test below checks their entries instead).
 */
const HOOKS = `export async function resolve(specifier, context, next) {
  const s = specifier.split('?')[0];
  if (s === 'tsx' || s.startsWith('tsx/') || s.endsWith('.ts') || s.endsWith('.mts') || s.endsWith('.cts')) throw new Error('TypeScript at run time: ' + specifier);
  return next(specifier, context);
}
`;

async function startCompiled(dir: string, env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const guard = join(dir, 'no-typescript.mjs');
  writeFileSync(join(dir, 'no-typescript-hooks.mjs'), HOOKS);
  writeFileSync(
    guard,
    `import { register } from 'node:module';\nregister('./no-typescript-hooks.mjs', import.meta.url);\n`,
  );
  const t0 = performance.now();
  // Plain node with npm start's options and no inherited ones; the guard makes any TypeScript at run time an error.
  const proc = spawn(process.execPath, [...START_OPTIONS, '--import', guard, CLI, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      ORRERY_LOG_LEVEL: 'warn',
      ORRERY_ADMIN_KEY: ADMIN_KEY,
      ORRERY_HOST: '127.0.0.1',
      ORRERY_PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the compiled server exited early:\n${out}`);
    if (Date.now() > until) throw new Error(`the compiled server did not answer /health:\n${out}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const startMs = performance.now() - t0;
  return {
    url,
    proc,
    startMs,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

for (const dialect of TEST_DIALECTS) {
  describe(`compiled build: npm start (node dist/cli.js serve) [${dialect}]`, () => {
    let srv: Started;
    let dataDir: string;
    let pgdb: { url: string; drop: () => Promise<void> } | undefined;
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${srv.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    before(async () => {
      ensureBuild();
      dataDir = mkdtempSync(join(tmpdir(), 'orrery-compiled-'));
      if (dialect === 'postgres') pgdb = await createPgDatabase();
      srv = await startCompiled(dataDir, {
        ORRERY_DATA_DIR: join(dataDir, 'data'),
        ...(pgdb ? { ORRERY_DATABASE_URL: pgdb.url } : {}),
      });
    });

    after(async () => {
      await srv?.stop();
      await pgdb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('the build holds no TypeScript and every asset beside its code', () => {
      const files: string[] = [];
      const walk = (d: string) =>
        readdirSync(d, { withFileTypes: true }).forEach((e) =>
          e.isDirectory() ? walk(join(d, e.name)) : files.push(join(d, e.name).slice(ROOT.length)),
        );
      walk(join(ROOT, 'dist'));
      assert.deepEqual(
        files.filter((f) => f.endsWith('.ts')),
        [],
      );
      // Worker entries are found beside the code that starts them, with the build's extension.
      const offenders = files.filter(
        (f) => f.endsWith('.js') && /['"`]\.{1,2}\/[^'"`]*\.ts['"`]/.test(readFileSync(join(ROOT, f), 'utf8')),
      );
      assert.deepEqual(offenders, [], 'no compiled file names a .ts module');
      for (const asset of [
        'dist/workers/boot.mjs',
        'dist/embeddings/graph-worker.mjs',
        'dist/db/wal-checkpoint-worker.mjs',
        'dist/pricing/prices.json',
        'dist/runs/run-writer-worker.js',
        'dist/content/worker/content-worker.js',
        'dist/templates/worker/template-worker.js',
      ]) {
        assert.ok(files.includes(asset), `${asset} is in the build`);
      }
    });

    it('the build compiled the route schemas and bundled the dependencies of many files, in ASCII (issue 22)', () => {
      // Without them the server still works (it compiles its schemas and loads the packages from
      // node_modules at start-up), so only this test notices a build that silently fell back.
      const bundles = [
        'kysely',
        'typebox',
        'typebox-value',
        'jose',
        'fastify',
        'fastify-swagger',
        'fastify-static',
        'prom-client',
        'ajv',
        'ajv-formats',
        'secure-json-parse',
        'pino',
        'mime-types',
        'handlebars',
        'acorn',
        'eslint-scope',
        'jsonrepair',
        'csv-stringify-sync',
      ];
      for (const f of [
        'http/compiled/validators-text.cjs',
        'http/compiled/validators-json.cjs',
        'http/compiled/serializers.cjs',
        'vendor/schema-runtime.cjs',
        ...bundles.map((b) => `vendor/${b}.js`),
      ]) {
        assert.ok(existsSync(join(ROOT, 'dist', f)), `dist/${f} is in the build`);
      }
      const bare: string[] = [];
      const twoByte: string[] = [];
      const bundled =
        /(\bfrom\s*|\bimport\s*\(\s*)['"](kysely|@sinclair\/typebox|jose|fastify|@fastify\/swagger|@fastify\/static|prom-client|ajv|ajv-formats|secure-json-parse|pino|mime-types|handlebars|acorn|eslint-scope|jsonrepair|csv-stringify)(\/[^'"]*)?['"]/;
      const walk = (d: string) =>
        readdirSync(d, { withFileTypes: true }).forEach((e) => {
          const f = join(d, e.name);
          if (e.isDirectory()) return walk(f);
          if (!/\.(c|m)?js$/.test(f)) return;
          const text = readFileSync(f, 'utf8');
          // The bundles' own doc comments show such imports.
          if (
            !f.startsWith(join(ROOT, 'dist', 'vendor')) &&
            (bundled.test(text) || /require\(['"](fast-json-stringify|ajv)\//.test(text))
          )
            bare.push(f.slice(ROOT.length));
          if (/[^\x00-\x7f]/.test(text)) twoByte.push(f.slice(ROOT.length));
        });
      walk(join(ROOT, 'dist'));
      assert.deepEqual(
        bare,
        [],
        'dist/ imports the bundled packages from dist/vendor/, and the compiled schemas their helpers',
      );
      assert.deepEqual(
        twoByte,
        [],
        'every file of dist/ is ASCII (V8 holds a source with other characters at two bytes each)',
      );
    });

    it('serves the OpenAPI document the sources serve, its metrics and a CSV export, through the bundles', async () => {
      const fromSources = await startTestServer(dialect);
      try {
        const strip = (doc: any) => ({ ...doc, servers: undefined });
        const built = await api('GET', '/api/v1/openapi.json');
        const source = await fromSources.api('GET', '/api/v1/openapi.json');
        assert.equal(built.status, 200);
        assert.ok(Object.keys(built.body.paths).length > 50, 'the routes are documented');
        assert.deepEqual(
          strip(built.body),
          strip(source.body),
          'the bundled @fastify/swagger builds the same document',
        );
      } finally {
        await fromSources.close();
      }
      const metrics = await (await fetch(`${srv.url}/metrics`)).text();
      assert.match(metrics, /^orrery_nodejs_eventloop_lag_p99_seconds \d/m);
      const csv = await fetch(`${srv.url}/api/v1/runs/export?format=csv`, {
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
      });
      assert.equal(csv.status, 200);
      assert.match(csv.headers.get('content-type') ?? '', /text\/csv/);
      assert.match((await csv.text()).split('\n')[0], /^id,/);
      // acorn and eslint-scope: a jst prompt's variables are read from its code when it is saved.
      const jst = await api('POST', '/api/v1/prompts', {
        name: 'jst prompt',
        role: 'user',
        content: 'return `Tell me about ${topic}`;',
        content_type: 'jst',
      });
      assert.equal(jst.status, 200, JSON.stringify(jst.body));
    });

    it('answers /health, executes a run on the test provider and records it', async (t) => {
      // How long it takes to start is measured by `npm run bench -- footprint`.
      t.diagnostic(`started in ${Math.round(srv.startMs)} ms`);
      const env = await api('POST', '/api/v1/environments', {
        name: 'Test env',
        provider: 'test',
        default_model: 'echo',
      });
      const prompt = await api('POST', '/api/v1/prompts', {
        name: 'echo prompt',
        role: 'user',
        content: 'Say: {{text}}',
        content_type: 'handlebars',
      });
      const interaction = await api('POST', '/api/v1/interactions', {
        name: 'Echo',
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.deepEqual(
        [env.status, prompt.status, interaction.status],
        [200, 200, 200],
        JSON.stringify([env.body, prompt.body, interaction.body]),
      );
      const run = await api('POST', '/api/v1/execute', { interaction: 'Echo@draft', data: { text: 'from dist' } });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.equal(run.body.status, 'completed');
      assert.match(JSON.stringify(run.body.result), /Say: from dist/);
      const again = await api('GET', `/api/v1/runs/${run.body.id}`);
      assert.equal(again.status, 200);
      assert.equal(again.body.status, 'completed');
    });

    it('serves the web console the install step built, at /, with its hashed assets', async () => {
      const page = await fetch(`${srv.url}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      const html = await page.text();
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      assert.ok(script, html.slice(0, 300));
      const asset = await fetch(`${srv.url}${script}`);
      assert.equal(asset.status, 200);
      assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
      await asset.arrayBuffer();
    });

    it('processes an uploaded PDF in a content worker process', async () => {
      const up = await api('POST', '/api/v1/objects/upload-url', { name: 'report.pdf' });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const put = await fetch(up.body.url, {
        method: 'PUT',
        body: await makePdf(2),
        headers: { 'content-type': 'application/pdf' },
      });
      assert.equal(put.status, 200);
      await put.arrayBuffer();
      const created = await api('POST', '/api/v1/objects', {
        name: 'report.pdf',
        content: { source: up.body.id, type: 'application/pdf' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      let obj: any;
      for (const until = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
        obj = (await api('GET', `/api/v1/objects/${created.body.id}?select=${encodeURIComponent('+text')}`)).body;
        if (obj.status === 'ready' || obj.status === 'failed' || Date.now() > until) break;
      }
      assert.equal(obj.status, 'ready', `${JSON.stringify(obj.error ?? obj.status)}\n${srv.output()}`);
      assert.match(obj.text, /Page 1 begins here/);
      assert.match(obj.text, /Page 2 begins here/);
      assert.ok(obj.tokens?.count > 0, 'tokens counted in the worker');
    });
  });
}
