/**
 * The official `vertesia` CLI (@vertesia/cli 1.4.1, a devDependency) against a real Orrery. Every
 * command runs as a child process, with a throwaway HOME and a hard timeout, configured by the
 * `export` lines that `orrery keys create` prints; its output is checked. One server per dialect
 * serves every command (a CLI start costs about a second of CPU), so related commands share a case.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { ORRERY_CLI } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const execFileP = promisify(execFile);
const VERTESIA = join(ROOT, 'node_modules/@vertesia/cli/bin/app.js');
/** No command may run longer than this: a hung CLI fails the test instead of stalling the suite. */
const CLI_TIMEOUT_MS = 60_000;

interface Cli {
  code: number | null;
  stdout: string;
  stderr: string;
}

const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

/** Runs a command with exactly `env` (nothing inherited but PATH), stdin closed unless `input`. */
function run(args: string[], env: Record<string, string>, opts: { cwd?: string; input?: string } = {}): Promise<Cli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: opts.cwd ?? ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FORCE_COLOR: '0', NO_COLOR: '1', ...env },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      timeout: CLI_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    if (opts.input !== undefined) child.stdin!.end(opts.input);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (signal === 'SIGKILL')
        return reject(new Error(`${args.join(' ')} hung (killed after ${CLI_TIMEOUT_MS} ms)\n${stdout}\n${stderr}`));
      resolve({ code, stdout: stripAnsi(stdout), stderr: stripAnsi(stderr) });
    });
  });
}

/** `run --no-stream` prints a spinner line, then the JSON of the run(s). */
function jsonAfterSpinner(out: string): any {
  const start = out.search(/^[[{]/m);
  assert.ok(start >= 0, `no JSON in:\n${out}`);
  return JSON.parse(out.slice(start));
}

const jsonl = (out: string): any[] =>
  out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

const ok = (r: Cli, what: string) => assert.equal(r.code, 0, `${what} failed:\n${r.stdout}\n${r.stderr}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the official vertesia CLI`, () => {
    /**
     * On PostgreSQL only the first case (`orrery keys create` on that database, and the CLI
     * connecting with what it prints). The others check the CLI's way through the HTTP API
     * (requests, answers, exit codes, what it prints and writes), not the storage behind it, which
     * the same routes' own tests run on both databases; each command is a CLI start (about a
     * second of CPU), so a second pass was a hundred seconds of the suite checking nothing more.
     */
    const sqliteOnly: typeof it = dialect === 'sqlite' ? it : ((() => {}) as unknown as typeof it);
    let srv: TestServer;
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    let secondEnv: { id: string };
    let home: string;
    let work: string;
    /** VERTESIA_* as printed by `orrery keys create`, plus the throwaway HOME. */
    let env: Record<string, string>;
    let keysOutput: string;
    const vertesia = (args: string[], opts: { cwd?: string; input?: string; env?: Record<string, string> } = {}) =>
      run([VERTESIA, ...args], opts.env ?? env, opts);
    /** Ids of runs the CLI made, by what made them. */
    const runs: Record<string, string> = {};

    before(async () => {
      srv = await startTestServer(dialect);
      seeded = await seedEcho(srv);
      const second = await srv.api('POST', '/api/v1/environments', {
        name: 'Second env',
        provider: 'test',
        default_model: 'echo',
      });
      assert.equal(second.status, 200, JSON.stringify(second.body));
      secondEnv = second.body;
      // Version 1 (tagged stable) says "Say: …"; the draft then changes to "Draft: …".
      const published = await srv.api('POST', `/api/v1/interactions/${seeded.interaction.id}/publish`, {
        tags: ['stable'],
      });
      assert.equal(published.status, 200, JSON.stringify(published.body));
      const draft = await srv.api('PUT', `/api/v1/interactions/${seeded.interaction.id}`, {
        prompts: [
          { type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Draft: {{text}}' } },
        ],
      });
      assert.equal(draft.status, 200, JSON.stringify(draft.body));
      // `content post` needs an existing object type (see the README).
      const type = await srv.api('POST', '/api/v1/types', { name: 'Note' });
      assert.equal(type.status, 200, JSON.stringify(type.body));

      home = mkdtempSync(join(tmpdir(), 'orrery-cli-home-'));
      work = mkdtempSync(join(tmpdir(), 'orrery-cli-work-'));
      // The management command, on the same database (and so the same secret) as the server.
      const keys = await run(
        [
          ...ORRERY_CLI,
          'keys',
          'create',
          '--name',
          'vertesia cli',
          '--data-dir',
          srv.dataDir,
          '--public-url',
          srv.url,
          ...(srv.databaseUrl ? ['--database-url', srv.databaseUrl] : []),
        ],
        { HOME: home },
      );
      ok(keys, 'orrery keys create');
      keysOutput = keys.stdout;
      env = { HOME: home };
      for (const [, name, value] of keysOutput.matchAll(/^export (VERTESIA_[A-Z_]+)=([^\s$]+)$/gm)) env[name] = value;
    });
    after(async () => {
      await srv?.close();
      if (home) rmSync(home, { recursive: true, force: true });
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('connects with the variables `orrery keys create` prints (a token, never the sk- key); projects, envs, interactions', async () => {
      assert.deepEqual(Object.keys(env).sort(), [
        'HOME',
        'VERTESIA_SERVER_URL',
        'VERTESIA_STORE_URL',
        'VERTESIA_TOKEN',
        'VERTESIA_TOKEN_SERVER_URL',
      ]);
      assert.equal(env.VERTESIA_SERVER_URL, srv.url);
      assert.equal(env.VERTESIA_STORE_URL, srv.url);
      assert.equal(env.VERTESIA_TOKEN_SERVER_URL, `${srv.url}/api/v1`);
      const key = /^\s+(sk-\S+)$/m.exec(keysOutput)?.[1];
      assert.ok(key, keysOutput);
      // How to get a new token: the key never on a command line, and the line works as printed (bash, curl, jq).
      const refresh = /^export VERTESIA_TOKEN=\$\(.*\)$/m.exec(keysOutput)?.[0];
      assert.ok(refresh && refresh.includes(`${srv.url}/api/v1/token/issue`), keysOutput);
      assert.ok(!refresh.includes(key), 'the sk- key is not in the refresh command');
      const renewed = (
        await execFileP('bash', ['-c', `${refresh}; printf %s "$VERTESIA_TOKEN"`], {
          env: { ...process.env, ORRERY_API_KEY: key },
        })
      ).stdout;
      assert.match(renewed, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
      assert.equal(
        (await fetch(`${srv.url}/api/v1/projects`, { headers: { authorization: `Bearer ${renewed}` } })).status,
        200,
      );

      const [projects, envs, interactions, oneEnv, draft] = await Promise.all([
        vertesia(['projects']),
        // The token alone: the endpoints come from its claims.
        vertesia(['envs'], { env: { HOME: home, VERTESIA_TOKEN: env.VERTESIA_TOKEN } }),
        // No VERTESIA_TOKEN_SERVER_URL: the client falls back to the token's `iss`, which must be a URL.
        vertesia(['interactions'], { env: { ...env, VERTESIA_TOKEN_SERVER_URL: '' } }),
        // A JWT in VERTESIA_APIKEY is sent as it is (only sk-/pk- keys are exchanged).
        vertesia(['envs', seeded.env.id], {
          env: {
            HOME: home,
            VERTESIA_SERVER_URL: srv.url,
            VERTESIA_STORE_URL: srv.url,
            VERTESIA_APIKEY: env.VERTESIA_TOKEN,
          },
        }),
        vertesia(['interactions', seeded.interaction.id]),
      ]);
      for (const [r, what] of [
        [projects, 'projects'],
        [envs, 'envs'],
        [interactions, 'interactions'],
        [oneEnv, 'envs <id>'],
        [draft, 'interactions <id>'],
      ] as const)
        ok(r, what);
      assert.equal(projects.stdout.trim(), `Default project [${srv.orrery.bootstrap.project.id}] ✔`);
      assert.deepEqual(envs.stdout.trim().split('\n').sort(), [
        `Second env [${secondEnv.id}]`,
        `Test env [${seeded.env.id}]`,
      ]);
      assert.deepEqual(oneEnv.stdout.trim().split('\n'), [
        `Test env [${seeded.env.id}]`,
        'Provider: test',
        'Description: n/a',
        'Default Model: echo',
        'Enabled Models: n/a',
      ]);
      assert.equal(interactions.stdout.trim(), `Echo [${seeded.interaction.id}]`);
      assert.deepEqual(draft.stdout.trim().split('\n'), [
        `Echo [${seeded.interaction.id}]`,
        'Description: n/a',
        'Class name: Echo',
        'Status: draft',
        'Version: 0',
        'Tags: n/a',
        'Published Versions: 1',
      ]);
    });

    sqliteOnly(
      'run streams the result, or prints the run with --no-stream, with data, tags, temperature, model, environment, count',
      async () => {
        writeFileSync(join(work, 'input.json'), JSON.stringify({ text: 'from a file' }));
        const [streamed, blocking, otherModel, byId, counted] = await Promise.all([
          vertesia(['run', 'Echo@draft', '-d', '{"text":"hello world"}']),
          vertesia([
            'run',
            'Echo@draft',
            '--no-stream',
            '-d',
            '{"text":"tagged"}',
            '-T',
            'a,b',
            '-t',
            '0.25',
            '-e',
            secondEnv.id,
          ]),
          vertesia(['run', 'Echo@draft', '-S', '-d', '{"text":"x"}', '-m', 'json']),
          vertesia(['run', seeded.interaction.id, '--by-id', '-i', 'input.json'], { cwd: work }),
          vertesia(['run', 'Echo@draft', '-S', '-c', '2', '--jsonl', '-d', '{"text":"twice"}']),
        ]);
        for (const [r, what] of [
          [streamed, 'streamed'],
          [blocking, '--no-stream'],
          [otherModel, '-m'],
          [byId, '--by-id -i'],
          [counted, '-c 2'],
        ] as const)
          ok(r, `run ${what}`);

        // Streamed: only the chunks, joined, on stdout.
        assert.equal(streamed.stdout, 'Draft: hello world');
        assert.equal(byId.stdout, 'Draft: from a file');

        const run = jsonAfterSpinner(blocking.stdout);
        assert.equal(run.status, 'completed');
        assert.deepEqual(run.result, [{ type: 'text', value: 'Draft: tagged' }]);
        assert.deepEqual(run.parameters, { text: 'tagged' });
        assert.deepEqual(run.tags, ['a', 'b'], 'the CLI sends -T a,b as one tag "a,b"; the server splits it');
        assert.equal(run.config.model_options.temperature, 0.25);
        assert.equal(run.config.temperature, 0.25);
        assert.equal(run.environment.id, secondEnv.id);
        assert.equal(run.interaction, seeded.interaction.id);
        runs.tagged = run.id;

        const json = jsonAfterSpinner(otherModel.stdout);
        assert.equal(json.modelId, 'json');
        assert.equal(json.status, 'completed');
        runs.json = json.id;

        const two = jsonl(counted.stdout.slice(counted.stdout.search(/^\{/m)));
        assert.equal(two.length, 2);
        assert.notEqual(two[0].id, two[1].id);
        for (const r of two) assert.deepEqual(r.result, [{ type: 'text', value: 'Draft: twice' }]);

        // The streamed run is recorded, completed, with the streamed text as its result.
        const listed = (await srv.api('GET', '/api/v1/runs?limit=100')).body as Array<{ id: string }>;
        const full = await Promise.all(listed.map((r) => srv.api('GET', `/api/v1/runs/${r.id}`).then((x) => x.body)));
        const streamedRun = full.find((r) => r.parameters?.text === 'hello world');
        assert.equal(streamedRun?.status, 'completed');
        assert.deepEqual(streamedRun.result, [{ type: 'text', value: 'Draft: hello world' }]);
      },
    );

    sqliteOnly(
      'run selects the latest published version, a version or a tag; an unknown one and a failure print the error',
      async () => {
        const [latest, version, tag, unknownVersion, failing, failingStreamed] = await Promise.all([
          vertesia(['run', 'Echo', '-d', '{"text":"latest"}']),
          vertesia(['run', 'Echo@1', '-d', '{"text":"one"}']),
          vertesia(['run', 'Echo@stable', '-d', '{"text":"tagged"}']),
          vertesia(['run', 'Echo@9', '-d', '{"text":"nine"}']),
          vertesia(['run', 'Echo@draft', '-S', '-d', '{"text":"boom"}', '-m', 'error']),
          vertesia(['run', 'Echo@draft', '-d', '{"text":"boom, streamed"}', '-m', 'error']),
        ]);
        // A bare name is the latest published version (version 1 says "Say:", the draft "Draft:").
        for (const [r, text] of [
          [latest, 'Say: latest'],
          [version, 'Say: one'],
          [tag, 'Say: tagged'],
        ] as const) {
          ok(r, `run ${text}`);
          assert.equal(r.stdout, text);
        }
        assert.equal(unknownVersion.code, 1);
        assert.match(unknownVersion.stderr, /interaction "Echo@9" was not found in this project/);
        assert.match(unknownVersion.stderr, /POST .*\/api\/v1\/execute => 404/);

        assert.equal(failing.code, 1);
        assert.match(failing.stderr, /the error model always fails/);
        const runId = /run_id: '([^']+)'/.exec(failing.stderr)?.[1];
        assert.ok(runId, failing.stderr);
        runs.failed = runId;
        // Streamed, the CLI ignores how the run ended (the stream's close event carries the failed
        // run): it prints nothing and exits 0. It must not hang.
        assert.equal(failingStreamed.code, 0, failingStreamed.stderr);
        assert.equal(failingStreamed.stdout, '');
      },
    );

    sqliteOnly('runs lists the history with filters, Lucene queries, pages and json or jsonl', async () => {
      const all = (await srv.api('GET', '/api/v1/runs?limit=1000')).body as Array<{ id: string }>;
      const ids = all.map((r) => r.id);
      assert.equal(ids.length, 11, 'the runs of the previous cases');
      const q = (args: string[]) => vertesia(['runs', ...args]);
      const [everything, tagged, failed, byEnv, byModel, lucene, page, csv] = await Promise.all([
        q(['-f', 'jsonl']),
        q(['-t', 'a', '-f', 'jsonl']),
        q(['--status', 'failed', '-f', 'json']),
        q(['-e', secondEnv.id, '-f', 'jsonl']),
        q(['-m', 'json', '-f', 'jsonl']),
        q(['-q', 'tags:b AND status:completed', '-f', 'jsonl']),
        q(['-l', '4', '-P', '1', '-f', 'jsonl']),
        q(['-f', 'csv']),
      ]);
      for (const r of [everything, tagged, failed, byEnv, byModel, lucene, page]) ok(r, 'runs');
      const lines = jsonl(everything.stdout);
      assert.deepEqual(
        lines.map((r) => r.id),
        ids,
        'newest first, as GET /runs lists them',
      );
      for (const r of lines)
        assert.ok(r.status && r.interaction?.name && r.environment?.id && r.created_at, JSON.stringify(r));
      const failedRuns = JSON.parse(failed.stdout);
      assert.deepEqual(
        failedRuns,
        lines.filter((r) => r.status === 'failed'),
        '-f json prints the same references as an array',
      );
      assert.equal(failedRuns.length, 2);
      assert.ok(failedRuns.some((r: { id: string }) => r.id === runs.failed));
      assert.deepEqual(
        jsonl(tagged.stdout).map((r) => r.id),
        [runs.tagged],
      );
      assert.deepEqual(
        jsonl(byEnv.stdout).map((r) => r.id),
        [runs.tagged],
      );
      assert.deepEqual(
        jsonl(byModel.stdout).map((r) => r.id),
        [runs.json],
      );
      assert.deepEqual(
        jsonl(lucene.stdout).map((r) => r.id),
        [runs.tagged],
      );
      assert.deepEqual(
        jsonl(page.stdout).map((r) => r.id),
        ids.slice(4, 8),
        '-P counts pages of -l from 0',
      );
      // A limit of the CLI itself: it searches, then refuses the format.
      assert.equal(csv.code, 1);
      assert.match(csv.stderr, /CSV format is not supported yet/);
    });

    sqliteOnly('content post, get, text, download, list, search and delete', async () => {
      const body = 'The quick brown fox jumps over the lazy dog.\nÉtoiles et orreries ✨\n';
      writeFileSync(join(work, 'notes.txt'), body);
      const [posted, filed] = await Promise.all([
        vertesia(['content', 'post', 'notes.txt', '--type', 'Note'], { cwd: work }),
        // `--type auto` is refused by the CLI itself; the label of its "auto" choice is accepted.
        vertesia(
          [
            'content',
            'post',
            'notes.txt',
            '--name',
            'filed.txt',
            '--path',
            '/docs/2026',
            '--type',
            'Auto (Vertesia will analyze the file and select the most appropriate type)',
          ],
          { cwd: work },
        ),
      ]);
      ok(posted, 'content post');
      ok(filed, 'content post --path --type Auto…');
      const id = /^Created object (\S+)$/m.exec(posted.stdout)?.[1];
      const filedId = /^Created object (\S+)$/m.exec(filed.stdout)?.[1];
      assert.ok(id && filedId, posted.stdout + filed.stdout);

      // Content processing is asynchronous: wait until the objects are ready.
      const until = Date.now() + 30_000;
      for (const oid of [id, filedId]) {
        for (;;) {
          const o = await srv.api('GET', `/api/v1/objects/${oid}`);
          if (o.body?.status === 'ready') break;
          assert.notEqual(o.body?.status, 'failed', JSON.stringify(o.body));
          assert.ok(Date.now() < until, `object ${oid} is still ${o.body?.status}`);
          await sleep(100);
        }
      }

      const out = join(work, 'out');
      mkdirSync(out);
      const [got, text, download, list, listFolder, search] = await Promise.all([
        vertesia(['content', 'get', id]),
        vertesia(['content', 'text', id]),
        vertesia(['content', 'download', id], { cwd: out }),
        vertesia(['content', 'list']),
        vertesia(['content', 'list', '/docs/2026']),
        vertesia(['content', 'search', 'fox']),
      ]);
      for (const [r, what] of [
        [got, 'get'],
        [text, 'text'],
        [download, 'download'],
        [list, 'list'],
        [listFolder, 'list <folder>'],
        [search, 'search'],
      ] as const)
        ok(r, `content ${what}`);

      assert.match(got.stdout, new RegExp(`id: '${id}'`));
      assert.match(got.stdout, /name: 'notes\.txt'/);
      assert.match(got.stdout, /status: 'ready'/);
      assert.match(got.stdout, /type: \{[^}]*name: 'Note'/);

      assert.equal(text.stdout, `${body}\n`);

      assert.equal(download.stdout.trim(), 'Downloaded to: notes.txt');
      assert.ok(
        readFileSync(join(out, 'notes.txt')).equals(Buffer.from(body)),
        'the downloaded bytes are the posted ones',
      );

      const rows = list.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
      assert.deepEqual(rows.map((r) => r[0]).sort(), [id, filedId].sort());
      assert.deepEqual(
        rows.find((r) => r[0] === id),
        [id, 'notes.txt', 'Note', 'ready', '/'],
      );
      assert.equal(listFolder.stdout.trim(), [filedId, 'filed.txt', '', 'ready', '/docs/2026'].join('\t'));
      assert.deepEqual(
        search.stdout
          .trim()
          .split('\n')
          .map((l) => l.split('\t')[0])
          .sort(),
        [id, filedId].sort(),
      );
      assert.match(search.stderr, /Found 2 results/);

      const deleted = await vertesia(['content', 'delete', filedId]);
      ok(deleted, 'content delete');
      const gone = await vertesia(['content', 'get', filedId]);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, new RegExp(`object "${filedId}" was not found in this project`));
      assert.match(gone.stderr, /=> 404/);
      assert.equal((await srv.api('GET', `/api/v1/objects/${filedId}`)).status, 404);
    });

    sqliteOnly('what Orrery lacks is a 4xx the CLI prints, and the CLI wrote nothing to HOME', async () => {
      const query = await vertesia(['content', 'query', '--dsl', '{"query":{"match_all":{}}}']);
      assert.equal(query.code, 1);
      assert.match(query.stderr, /no route for POST \/api\/v1\/query/);
      assert.match(query.stderr, /=> 404/);
      assert.deepEqual(readdirSync(home), []);
    });
  });
}
