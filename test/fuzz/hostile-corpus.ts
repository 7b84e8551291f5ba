/**
 * The cost-amplification forms of the fuzz corpus, as fixed requests, and the large-document
 * fixture they aim at: a project holding a run with about 1 MiB of `data` and an object with
 * about 1 MiB of `properties` (the inline bound), beside a few hundred ordinary ones. The fuzz
 * suite (routes.test.ts) sends each form and checks what it costs the server; the hardening
 * benchmark (bench/hostile.ts) measures each one's event-loop delay, time and memory.
 */

export interface HostileApi {
  (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export interface HostileFixture {
  interaction: string;
  loopingJst: string;
  hugeErrorJst: string;
  dynamicCollection: string;
  largeRun: string;
}

export interface HostileForm {
  name: string;
  method: string;
  path: string;
  /** The JSON body, encoded once before it is sent (a 15 MB body is not the server's cost). */
  body?: string;
  /** Statuses that answer the form correctly (refused with a bound, or served). */
  expect: number[];
}

/** About `bytes` of JSON in many small keys, as a large `data` or `properties` arrives. */
function largeDocument(bytes: number): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  const value = 'v'.repeat(100);
  for (let i = 0; i * 112 < bytes; i++) doc[`k${i}`] = value;
  return doc;
}

const MiB = 1024 ** 2;
/** Just under the 1 MiB inline bound. */
const LARGE = MiB - 64 * 1024;

/** Ordinary runs and objects seeded beside the large ones (the probe's project held a few hundred). */
const ORDINARY = 300;

async function ok(api: HostileApi, method: string, path: string, body?: unknown): Promise<any> {
  const r = await api(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
}

/** Seeds the large-document fixture in the project of `api`'s key (the `test` provider, offline). */
export async function seedHostileFixture(api: HostileApi): Promise<HostileFixture> {
  const env = await ok(api, 'POST', '/api/v1/environments', {
    name: 'offline',
    provider: 'test',
    default_model: 'echo',
  });
  const interactionOf = async (name: string, content_type: string, content: string) =>
    (
      await ok(api, 'POST', '/api/v1/interactions', {
        name,
        environment: env.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type, content } }],
      })
    ).id as string;
  const interaction = await interactionOf('Echo', 'handlebars', 'Say {{text}}');
  const loopingJst = await interactionOf('Loop', 'jst', 'while (true) {}');
  const hugeErrorJst = await interactionOf('Throw', 'jst', "throw new Error('e'.repeat(5e6))");
  const largeRun = (
    await ok(api, 'POST', '/api/v1/runs', { interaction, data: { text: 'large', ...largeDocument(LARGE) } })
  ).id as string;
  await ok(api, 'POST', '/api/v1/objects', { name: 'large', properties: largeDocument(LARGE) });
  for (let i = 0; i < ORDINARY; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) =>
        ok(api, 'POST', '/api/v1/runs', {
          interaction,
          data: { text: `ordinary ${i + j}`, n: i + j },
          tags: [`t${(i + j) % 7}`],
        }),
      ),
    );
  }
  await ok(api, 'POST', '/api/v1/operations', {
    name: 'create',
    ids: [],
    params: {
      objects: Array.from({ length: ORDINARY }, (_, i) => ({ name: `ordinary ${i}`, properties: { n: i, c: i % 5 } })),
    },
  });
  const dynamicCollection = (
    await ok(api, 'POST', '/api/v1/collections', {
      name: 'every object',
      dynamic: true,
      query: { 'properties.c': { $in: [0, 1, 2, 3, 4] } },
    })
  ).id as string;
  return { interaction, loopingJst, hugeErrorJst, dynamicCollection, largeRun };
}

/** `$or` of `n` conditions on distinct JSON paths: the form whose cost multiplied by the documents' size. */
const orFanOut = (root: string, n: number) => ({
  $or: Array.from({ length: n }, (_, i) => ({ [`${root}.k${i}`]: `x${i}` })),
});

/** A run record of about `bytes` for POST /import/runs, the bulk in `field`. */
function importedRun(f: HostileFixture, bytes: number, field: 'parameters' | 'config'): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    source: 'https://source.example',
    source_id: `big-${field}-${bytes}-${Math.random().toString(36).slice(2)}`,
    source_version: null,
    run: {
      status: 'completed',
      interaction: { id: f.interaction },
      created_at: now,
      updated_at: now,
      [field]: largeDocument(bytes),
    },
  });
}

/** The hostile forms, each one request. Bodies are built per call (imports need fresh source ids). */
export function hostileForms(f: HostileFixture): HostileForm[] {
  const json = (v: unknown) => JSON.stringify(v);
  return [
    {
      name: 'runs/find $or of 32 on parameters.*',
      method: 'POST',
      path: '/api/v1/runs/find',
      body: json({ query: orFanOut('parameters', 32), limit: 100 }),
      expect: [200, 400, 422],
    },
    {
      name: 'objects/find $or of 32 on properties.*',
      method: 'POST',
      path: '/api/v1/objects/find',
      body: json({ query: orFanOut('properties', 32), limit: 100 }),
      expect: [200, 400, 422],
    },
    {
      name: 'objects/count $or of 32 on properties.*',
      method: 'POST',
      path: '/api/v1/objects/count',
      body: json({ query: orFanOut('properties', 32) }),
      expect: [200, 400, 422],
    },
    {
      name: 'dynamic collection members',
      method: 'GET',
      path: `/api/v1/collections/${f.dynamicCollection}/members?limit=1000`,
      expect: [200],
    },
    {
      name: 'runs/search Lucene range',
      method: 'POST',
      path: '/api/v1/runs/search',
      body: json({ query: 'execution_time:[0 TO 100000000] AND created_at:[2000-01-01 TO 2100-01-01]', limit: 1000 }),
      expect: [200, 400],
    },
    {
      name: 'runs/search Lucene regex',
      method: 'POST',
      path: '/api/v1/runs/search',
      body: json({ query: '/.*o.*r.*d.*/ OR /.*v{3,}.*/', limit: 1000 }),
      expect: [200, 400],
    },
    {
      name: 'runs/search Lucene wildcard',
      method: 'POST',
      path: '/api/v1/runs/search',
      body: json({ query: '*a* OR *e* OR *o*', limit: 1000 }),
      expect: [200, 400],
    },
    {
      name: 'bulk create of 1,000 objects',
      method: 'POST',
      path: '/api/v1/operations',
      body: json({
        name: 'create',
        ids: [],
        params: {
          objects: Array.from({ length: 1000 }, (_, i) => ({
            name: `bulk ${i}`,
            properties: { n: i, words: 'lorem ipsum '.repeat(20) },
            text: 'some words to index '.repeat(10),
          })),
        },
      }),
      expect: [200],
    },
    {
      name: 'import of a run with ~1 MB parameters',
      method: 'POST',
      path: '/api/v1/import/runs',
      body: importedRun(f, LARGE, 'parameters'),
      expect: [200],
    },
    {
      name: 'import of a 15 MB run',
      method: 'POST',
      path: '/api/v1/import/runs',
      body: importedRun(f, 15 * MiB, 'config'),
      expect: [413],
    },
    {
      name: 'looping jst template',
      method: 'POST',
      path: '/api/v1/runs',
      body: json({ interaction: f.loopingJst, data: {} }),
      expect: [422],
    },
    {
      name: 'jst error of 5,000,000 characters',
      method: 'POST',
      path: '/api/v1/runs',
      body: json({ interaction: f.hugeErrorJst, data: {} }),
      expect: [422],
    },
    {
      name: 'GET of the large run',
      method: 'GET',
      path: `/api/v1/runs/${f.largeRun}`,
      expect: [200],
    },
  ];
}

/** The forms' names, in order, without building their bodies. */
export const HOSTILE_FORM_NAMES: readonly string[] = [
  'runs/find $or of 32 on parameters.*',
  'objects/find $or of 32 on properties.*',
  'objects/count $or of 32 on properties.*',
  'dynamic collection members',
  'runs/search Lucene range',
  'runs/search Lucene regex',
  'runs/search Lucene wildcard',
  'bulk create of 1,000 objects',
  'import of a run with ~1 MB parameters',
  'import of a 15 MB run',
  'looping jst template',
  'jst error of 5,000,000 characters',
  'GET of the large run',
];
