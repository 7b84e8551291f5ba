/**
 * Starts a real Orrery on a free loopback port, on SQLite (a temporary data folder) or on a fresh
 * database of the test PostgreSQL cluster. Every test file runs its cases on each of TEST_DIALECTS.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { VertesiaClient } from '@vertesia/client';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildServer, type BuildOptions, type Orrery } from '../../src/server.ts';

export type TestDialect = 'sqlite' | 'postgres';

/** The dialects of this run: both unless ORRERY_TEST_DIALECTS narrows them (`npm test` sets it). */
export const TEST_DIALECTS: TestDialect[] = (process.env.ORRERY_TEST_DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter((d): d is TestDialect => d === 'sqlite' || d === 'postgres');

/**
 * The one dialect of a suite whose behaviour does not depend on the storage (a provider's wire
 * protocol, the content extractors, the template workers): SQLite, unless the run leaves it out.
 * What such a suite stores (runs, objects, environments) goes through the paths that their own
 * suites test on both databases; a second pass would check nothing more at twice the cost.
 */
export const ONE_DIALECT: TestDialect[] = TEST_DIALECTS.includes('sqlite') ? ['sqlite'] : TEST_DIALECTS.slice(0, 1);

/**
 * The options of a suite that only exists on PostgreSQL: skipped only when the run leaves
 * PostgreSQL out on purpose (ORRERY_TEST_DIALECTS=sqlite). When the run includes it, the suite
 * runs, and fails (createPgDatabase) if there is no cluster to run on, instead of passing unseen.
 */
export const POSTGRES_ONLY = {
  skip: !TEST_DIALECTS.includes('postgres') && 'the run does not include PostgreSQL (ORRERY_TEST_DIALECTS)',
};

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestServer {
  url: string;
  dialect: TestDialect;
  adminKey: string;
  orrery: Orrery;
  dataDir: string;
  databaseUrl?: string;
  api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    token?: string | null,
    headers?: Record<string, string>,
  ): Promise<ApiResponse<T>>;
  /** The official client with an sk- key (exchanged at our /token/issue). */
  client(key?: string): VertesiaClient;
  close(): Promise<void>;
}

/**
 * A pg pool for a test's own database (createPgDatabase). pg-pool resolves end() before its clients'
 * connections have closed, so `drop()`'s DROP DATABASE … WITH (FORCE) can still terminate one of
 * them; the client's error then reaches the pool, which (as the server's pool, db/open.ts) must
 * listen for it or the test process gets an uncaught exception after its tests have passed.
 */
export function testPgPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return pool;
}

/**
 * A fresh database on the test cluster: empty, or (`migrated`) a copy of the template database
 * that `npm test` migrated once (ORRERY_TEST_PG_TEMPLATE), so that a server started on it finds
 * every migration applied instead of running them all again. Without a template, an empty one.
 */
export async function createPgDatabase(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = process.env.ORRERY_TEST_PG_URL;
  if (!admin) throw new Error('ORRERY_TEST_PG_URL is not set: run the tests with `npm test`, which starts PostgreSQL');
  const name = `orrery_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const template = opts.migrated ? process.env.ORRERY_TEST_PG_TEMPLATE : undefined;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A data folder without a database gets a copy of the SQLite database `npm test` migrated once
 * (ORRERY_TEST_SQLITE_TEMPLATE), as PostgreSQL's get a copy of its template: a server started on it
 * finds every migration applied. A folder that holds a database (a restart) keeps it.
 */
export function copySqliteTemplate(dataDir: string): void {
  const template = process.env.ORRERY_TEST_SQLITE_TEMPLATE;
  const file = join(dataDir, 'orrery.db');
  if (!template || existsSync(file)) return;
  mkdirSync(dataDir, { recursive: true });
  copyFileSync(template, file);
}

export async function startTestServer(
  dialect: TestDialect,
  overrides: Partial<Config> = {},
  serverOptions: BuildOptions = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-test-'));
  if (dialect === 'sqlite') copySqliteTemplate(overrides.dataDir ?? dataDir);
  const pgdb = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
  const config = loadConfig(
    {},
    { port: 0, host: '127.0.0.1', dataDir, databaseUrl: pgdb?.url, logLevel: 'silent', ...overrides },
  );
  const orrery = await buildServer(config, { logger: false, ...serverOptions });
  const address = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
  if (!overrides.publicUrl) config.publicUrl = address;
  const adminKey = orrery.bootstrap.key!;
  const url = address;
  const api = async (
    method: string,
    path: string,
    body?: unknown,
    token: string | null = adminKey,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(url + path, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, body: parsed as any, headers: res.headers };
  };
  return {
    url,
    dialect,
    adminKey,
    orrery,
    dataDir,
    databaseUrl: pgdb?.url,
    api,
    client: (key = adminKey) =>
      new VertesiaClient({ serverUrl: url, storeUrl: url, tokenServerUrl: `${url}/api/v1`, apikey: key }),
    close: async () => {
      await orrery.app.close();
      await pgdb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An environment on the offline test provider, a prompt and an interaction that echoes `{{text}}`. */
export async function seedEcho(
  srv: TestServer,
  opts: { token?: string; name?: string; config?: Record<string, unknown> } = {},
) {
  const token = opts.token ?? srv.adminKey;
  const env = await srv.api(
    'POST',
    '/api/v1/environments',
    { name: 'Test env', provider: 'test', default_model: 'echo', config: opts.config },
    token,
  );
  const prompt = await srv.api(
    'POST',
    '/api/v1/prompts',
    { name: 'echo prompt', role: 'user', content: 'Say: {{text}}', content_type: 'handlebars' },
    token,
  );
  const interaction = await srv.api(
    'POST',
    '/api/v1/interactions',
    {
      name: opts.name ?? 'Echo',
      status: 'draft',
      environment: env.body.id,
      prompts: [{ type: 'template', template: prompt.body.id }],
    },
    token,
  );
  if (env.status !== 200 || prompt.status !== 200 || interaction.status !== 200) {
    throw new Error(`seeding failed: ${JSON.stringify([env.body, prompt.body, interaction.body])}`);
  }
  return { env: env.body, prompt: prompt.body, interaction: interaction.body };
}
