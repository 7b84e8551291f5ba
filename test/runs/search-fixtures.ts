/**
 * Seeded generators for the run-search tests: varied runs (written straight through the store,
 * the way the service writes them), Lucene queries built from the vocabulary of those runs (so
 * most of them match something), filters and facets, and the plain-TypeScript expectations the
 * server's answers are compared with. Every generator takes a `Rng`, so a failure names its seed.
 */
import { newId } from '../../src/db/ids.ts';
import type { OrreryDialect } from '../../src/db/dialect.ts';
import { Q, compareCodePoints, parseDateInterval, tokenize, type QueryNode } from '../../src/query/lucene/index.ts';
import { RUN_ROW_COLUMNS, toRun, type RunDoc, type RunRow } from '../../src/runs/model.ts';
import { decodeRun, encodeRun, updateRun, type Db } from '../../src/runs/store.ts';
import { insertRuns, type NewRun } from '../../src/runs/search-index.ts';
import type { Ref } from '../../src/auth/principal.ts';

// ---- randomness -----------------------------------------------------------------------------

export interface Rng {
  (): number;
  int(lo: number, hi: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
  some<T>(xs: readonly T[], max: number): T[];
}

export function rng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (() => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }) as Rng;
  next.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  next.pick = (xs) => xs[Math.floor(next() * xs.length)];
  next.chance = (p) => next() < p;
  next.some = (xs, max) => [...new Set(Array.from({ length: next.int(0, max) }, () => next.pick(xs)))];
  return next;
}

// ---- vocabulary -----------------------------------------------------------------------------

/** Words and word-like strings, with the cases tokenize / FTS must agree on. */
const VOCAB = [
  'hello',
  'Hello',
  'HELLO',
  'world',
  'World',
  'quarterly',
  'Quarterly',
  'report',
  'reports',
  'café',
  'cafe',
  'CAFÉ',
  'été',
  'ÉTÉ',
  '日本',
  'テキスト',
  'Ωmega',
  'straße',
  'ΟΔΟΣ',
  'İstanbul',
  'foo_bar',
  'a-b',
  'x42',
  '42',
  '3.14',
  'e\u0301te\u0301',
  "don't",
  'summary',
  'sum',
  'summit',
  'hel',
  'help',
  'yellow',
  'mellow',
  'the',
  'a',
  'of',
  'report!',
  '(note)',
  '🙂',
  'x²',
  'K',
  'naïve',
] as const;
const SEPARATORS = [' ', ' ', ' ', ', ', '\n', ' - ', '. '];

const text = (r: Rng, min = 0, max = 8): string => {
  const n = r.int(min, max);
  let out = '';
  for (let i = 0; i < n; i++) out += (i ? r.pick(SEPARATORS) : '') + r.pick(VOCAB);
  return out;
};

export const INTERACTIONS = [
  { id: 'ix-sum', name: 'Summarize' },
  { id: 'ix-tr', name: 'Translate' },
  { id: 'ix-cl', name: 'Classify docs' },
  // An id equal to another interaction's name: `interaction:Summarize` must find both.
  { id: 'Summarize', name: 'Odd one' },
] as const;
export const ENVIRONMENTS = [
  { id: 'env-openai', name: 'OpenAI prod', provider: 'openai' },
  { id: 'env-local', name: 'local', provider: 'test' },
] as const;
export const MODELS = ['gpt-4o', 'claude-3-5', 'llama3', 'GPT-4O'] as const;
export const STATUSES = ['created', 'processing', 'completed', 'failed'] as const;
export const TAGS = ['alpha', 'Alpha', 'beta', 'a b', 'x*y', 'café', 'urgent', 'v1.2'] as const;
export const FINISH = ['stop', 'length'] as const;
/** Tool names of the runs that ended in tool calls (`tool_use[].tool_name`; one run may call a tool twice). */
const TOOLS = ['get_weather', 'Get_Weather', 'search', 'lookup-order', 'a b'] as const;

/** One to three tool calls, as a run's `tool_use` holds them. */
const toolCalls = (r: Rng) =>
  Array.from({ length: r.int(1, 3) }, (_, i) => ({
    id: `call_${i}`,
    tool_name: r.pick(TOOLS),
    tool_input: { city: r.pick(['Paris', 'Oslo']) },
  }));

// ---- runs -----------------------------------------------------------------------------------

export interface Scope3 {
  account: Ref;
  project: Ref;
}

const iso = (ms: number) => new Date(ms).toISOString();
const T0 = Date.parse('2023-01-01T00:00:00.000Z');
const T1 = Date.parse('2025-12-31T23:59:59.999Z');

function parameters(r: Rng): unknown {
  if (r.chance(0.05)) return text(r, 1, 4);
  if (r.chance(0.03)) return [text(r, 1, 3), r.int(0, 9)];
  const p: Record<string, unknown> = {};
  if (r.chance(0.7))
    p.customer = {
      id: r.pick(['c-1', 'c-2', 'C-1', 'c 3']),
      name: text(r, 1, 3),
      ...(r.chance(0.2) ? { tier: r.pick([1, 2, 3]) } : {}),
    };
  if (r.chance(0.8)) p.topic = text(r, 0, 6);
  if (r.chance(0.5)) p.count = r.pick([0, 1, 2, 3, 5, 8, -1, 2.5]);
  if (r.chance(0.3)) p.flag = r.chance(0.5);
  if (r.chance(0.4))
    p.items = Array.from({ length: r.int(0, 3) }, () => ({
      sku: r.pick(['A-1', 'B-2', 'a-1', 'C 3']),
      qty: r.int(1, 4),
    }));
  if (r.chance(0.3))
    p.list = [text(r, 1, 2), r.int(0, 5), r.chance(0.5), null, [text(r, 1, 2), [r.pick(['deep', 'deeper'])]]];
  if (r.chance(0.1)) p['weird.key'] = 'dotted value';
  if (r.chance(0.1)) p.empty = r.pick(['', [], {}, null]);
  if (r.chance(0.1)) p.numstr = r.pick(['3', '3.0', '12', 'abc']);
  return p;
}

function result(r: Rng): unknown {
  const roll = r();
  if (roll < 0.1) return [];
  if (roll < 0.15) return [{ type: 'json', value: { answer: text(r, 1, 2), n: r.int(0, 9) } }];
  if (roll < 0.2)
    return [{ type: 'json', value: { a: 1 } }, { type: 'text', value: text(r, 1, 5) }, { value: text(r, 1, 3) }];
  if (roll < 0.22)
    return [
      { type: 'text', value: 42 },
      { type: null, value: 'typed null' },
    ];
  if (roll < 0.24) return text(r, 1, 4);
  return [{ type: 'text', value: text(r, 0, 12) }];
}

function prompt(r: Rng): unknown {
  const roll = r();
  if (roll < 0.05) return [];
  if (roll < 0.1) return text(r, 1, 5);
  return [
    ...(r.chance(0.6) ? [{ role: 'system', content: text(r, 1, 6) }] : []),
    { role: 'user', content: text(r, 0, 10) },
    ...(r.chance(0.1) ? [{ role: 'assistant', content: 7 }] : []),
  ];
}

export interface GeneratedRun extends NewRun {
  readonly row: RunRow;
}

/**
 * `n` varied runs of one project (ids time-sortable; many updated_at ties). `executor`: a live
 * replica other than the server's, to record as executing the `processing` runs, so the server's
 * lost-run sweeper leaves them alone (start the server with a long stream timeout for the
 * `created` ones).
 */
export function generateRuns(r: Rng, n: number, scope: Scope3, executor?: string): GeneratedRun[] {
  const instants = Array.from({ length: Math.max(1, Math.floor(n / 3)) }, () => r.int(T0, T1));
  const runs: GeneratedRun[] = [];
  for (let i = 0; i < n; i++) {
    const updated = r.pick(instants);
    const created = updated - r.int(0, 5_000_000);
    const ix = r.pick(INTERACTIONS);
    const env = r.chance(0.85) ? r.pick(ENVIRONMENTS) : null;
    const model = r.chance(0.9) ? r.pick(MODELS) : null;
    const tags = r.some(TAGS, 3);
    const doc: RunDoc = {
      result: result(r) as RunDoc['result'],
      parameters: parameters(r),
      prompt: prompt(r) as RunDoc['prompt'],
      config: {
        environment: env?.id,
        model,
        temperature: r.pick([0, 0.2, 0.7, 1]),
        ...(r.chance(0.5) ? { max_tokens: r.pick([16, 256, 1024]) } : {}),
        ...(r.chance(0.2) ? { model_options: { top_p: r.pick([0.5, 0.9]), stop: ['END', 'STOP'] } } : {}),
        ...(r.chance(0.1) ? { stream: r.chance(0.5) } : {}),
      },
      source: {
        type: r.pick(['api', 'cli']),
        label: `apikey:k${r.int(1, 3)}`,
        principal_type: 'apikey',
        principal_id: `k${r.int(1, 3)}`,
        client_ip: '127.0.0.1',
      },
      ttl: 0,
      stream: false,
      interaction: { ...ix, endpoint: ix.name.toLowerCase(), version: 1 },
      environment: env ? { ...env } : null,
      account: scope.account,
      project: scope.project,
      created_by: `apikey:k${r.int(1, 3)}`,
      ...(r.chance(0.3) ? { tool_use: toolCalls(r) } : {}),
    };
    const status = r.pick(STATUSES);
    const row = {
      id: newId(),
      account_id: scope.account.id,
      project_id: scope.project.id,
      interaction_id: ix.id,
      environment_id: env?.id ?? null,
      model_id: model,
      status,
      ...(executor ? { executor: status === 'processing' ? executor : null } : {}),
      parent_id: i > 10 && r.chance(0.15) ? runs[r.int(0, i - 1)].row.id : null,
      finish_reason: r.chance(0.7) ? r.pick(FINISH) : null,
      execution_time: r.chance(0.85) ? r.int(0, 20_000) : null,
      token_prompt: r.chance(0.8) ? r.int(0, 2000) : null,
      token_result: r.chance(0.8) ? r.int(0, 2000) : null,
      token_total: r.chance(0.8) ? r.int(0, 4000) : null,
      tags,
      created_at: iso(created),
      updated_at: iso(updated),
      doc,
    } as RunRow;
    runs.push({ row, tags });
  }
  return runs;
}

/** Writes runs through the store (bulk, in transactions), then gives some of them a final update. */
export async function storeRuns(db: Db, d: OrreryDialect, r: Rng, runs: GeneratedRun[]): Promise<RunRow[]> {
  for (let i = 0; i < runs.length; i += 500)
    await insertRuns(db, d, runs.slice(i, i + 500), (row) => encodeRun(d, row));
  const rows = runs.map((x) => x.row);
  for (let i = 0; i < rows.length; i++) {
    if (!r.chance(0.08)) continue;
    const doc = { ...(rows[i].doc as RunDoc), result: [{ type: 'text' as const, value: `updated ${text(r, 1, 6)}` }] };
    const patch = { status: 'completed', updated_at: rows[i].updated_at, finish_reason: 'stop', doc };
    if (!(await updateRun(db, d, rows[i].id, patch))) throw new Error(`update of ${rows[i].id} failed`);
    rows[i] = { ...rows[i], ...patch };
  }
  // The runs as the database hands them back (PostgreSQL's jsonb reorders object keys, and the
  // order of parameter strings is the order of words in the run's text).
  const ids = new Set(rows.map((x) => x.id));
  const back = await db
    .selectFrom('runs')
    .select(RUN_ROW_COLUMNS)
    .where('project_id', '=', rows[0].project_id)
    .execute();
  const stored = back.filter((x) => ids.has(x.id)).map((x) => decodeRun(d, x as RunRow));
  if (stored.length !== rows.length) throw new Error(`stored ${stored.length} of ${rows.length} runs`);
  return stored;
}

/** The run document the evaluator sees: the run as the API holds it. */
export const docOfRow = (row: RunRow) => toRun(row) as unknown as Record<string, unknown>;

/** Newest updated_at first, ties by id descending (decisions.md). */
export const byRecency = (a: Pick<RunRow, 'id' | 'updated_at'>, b: Pick<RunRow, 'id' | 'updated_at'>) =>
  a.updated_at === b.updated_at ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.updated_at < b.updated_at ? 1 : -1;

// ---- queries --------------------------------------------------------------------------------

/** Values seen in the data, per field, to build queries that match something. */
export interface Vocabulary {
  ids: string[];
  texts: string[];
  dates: string[];
}

export const vocabularyOf = (rows: RunRow[]): Vocabulary => ({
  ids: rows.map((x) => x.id),
  texts: rows.flatMap((x) => {
    const d = x.doc as RunDoc;
    return [JSON.stringify(d.prompt), JSON.stringify(d.result), JSON.stringify(d.parameters)];
  }),
  dates: rows.flatMap((x) => [x.created_at, x.updated_at]),
});

const KEYWORD_VALUES: Record<string, readonly string[]> = {
  status: [...STATUSES, 'Completed', 'done'],
  modelId: [...MODELS, 'gpt'],
  model: [...MODELS],
  finish_reason: [...FINISH, 'STOP'],
  'tool_use.tool_name': [...TOOLS, 'get_Weather', 'get'],
  tags: [...TAGS, 'ALPHA', 'a'],
  interaction: [...INTERACTIONS.flatMap((i) => [i.id, i.name]), 'summarize'],
  environment: [...ENVIRONMENTS.flatMap((e) => [e.id, e.name]), 'local ', 'openai'],
  'config.model': [...MODELS],
  'source.type': ['api', 'cli', 'API'],
  'source.principal_id': ['k1', 'k2', 'k3', 'k4'],
  'config.model_options.stop': ['END', 'STOP', 'end'],
  'parameters.customer.id': ['c-1', 'c-2', 'C-1', 'c 3', 'c'],
  'parameters.items.sku': ['A-1', 'B-2', 'a-1', 'C 3', 'a'],
  'parameters.numstr': ['3', '3.0', '12', 'abc'],
};
const NUMBER_FIELDS = [
  'execution_time',
  'token_use.prompt',
  'token_use.result',
  'token_use.total',
  'parameters.count',
  'parameters.customer.tier',
  'parameters.items.qty',
  'config.temperature',
  'config.max_tokens',
  'config.model_options.top_p',
  'parameters.list',
];
const TEXT_FIELDS = [
  null,
  null,
  null,
  'result',
  'prompt',
  'parameters.topic',
  'parameters.customer.name',
  'parameters.list',
  'parameters',
  'parameters.weird',
];
const EXISTS_FIELDS = [
  'tool_use.tool_name',
  'result',
  'prompt',
  'tags',
  'parent',
  'finish_reason',
  'environment',
  'interaction',
  'modelId',
  'execution_time',
  'token_use.total',
  'parameters',
  'parameters.customer',
  'parameters.customer.tier',
  'parameters.items',
  'parameters.items.sku',
  'parameters.empty',
  'parameters.list',
  'parameters.weird',
  'parameters.weird.key',
  'config.max_tokens',
  'config.model_options',
  'source.label',
  'created_at',
  'id',
];

/** A case flip or a truncation, by code point (a cut inside a surrogate pair would be malformed JSON text). */
const mutate = (r: Rng, text: string): string => {
  const s = [...text];
  if (s.length === 0) return text;
  const i = r.int(0, s.length - 1);
  return r.chance(0.5)
    ? [...s.slice(0, i), s[i] === s[i].toUpperCase() ? s[i].toLowerCase() : s[i].toUpperCase(), ...s.slice(i + 1)].join(
        '',
      )
    : s.slice(0, i).join('');
};

/** A glob derived from a value: a prefix, a `?` in place of a character, a suffix, or a middle. */
const globOf = (r: Rng, s: string): string => {
  const chars = [...s].map((c) => (c === '*' || c === '?' || c === '\\' ? `\\${c}` : c));
  if (chars.length === 0) return '*';
  const k = r.int(0, chars.length - 1);
  switch (r.int(0, 4)) {
    case 0:
      return `${chars.slice(0, Math.max(1, k)).join('')}*`;
    case 1:
      return [...chars.slice(0, k), '?', ...chars.slice(k + 1)].join('');
    case 2:
      return `*${chars.slice(k).join('')}`;
    case 3:
      return `*${chars.slice(k, k + 2).join('')}*`;
    default:
      return `${chars.slice(0, 1).join('')}*${chars.slice(-1).join('')}`;
  }
};

/** A word, a few consecutive words or a glob, taken from the run texts. */
function textValue(r: Rng, v: Vocabulary): { value: string; phrase?: boolean; wildcard?: boolean } {
  const source = r.pick(v.texts);
  const words = source
    .replace(/\\n/g, ' ')
    .split(/[\s"[\]{}:,]+/)
    .filter(Boolean);
  const w = words.length ? r.pick(words) : r.pick(VOCAB);
  switch (r.int(0, 6)) {
    case 0:
      return { value: r.pick(VOCAB) };
    case 1:
      return { value: mutate(r, w) || 'x' };
    case 2: {
      const toks = tokenize(source);
      const at = r.int(0, Math.max(0, toks.length - 3));
      return { value: toks.slice(at, at + r.int(2, 3)).join(' ') || 'hello world', phrase: true };
    }
    case 3:
      return {
        value: r.pick([
          'hel*',
          'h?llo',
          '*port',
          'caf?',
          'οδο?',
          '*ος',
          '日*',
          'e\u0301*',
          'sum*it',
          '*ll*',
          'x4?',
          'Hel*',
          '?',
          '*a-b*',
          'y*w',
        ]),
        wildcard: true,
      };
    case 4:
      return { value: globOf(r, tokenize(w)[0] ?? 'hello'), wildcard: true };
    default:
      return { value: w };
  }
}

const dateAt = (r: Rng, v: Vocabulary): string => {
  const d = r.pick(v.dates);
  return r.pick([
    d.slice(0, 4),
    d.slice(0, 7),
    d.slice(0, 10),
    d.slice(0, 16),
    d.slice(0, 19),
    d,
    `${d.slice(0, 16)}+02:00`,
  ]);
};

const numberAt = (r: Rng): string =>
  String(
    r.pick([0, 1, 2, 3, 5, 8, -1, 0.5, 0.7, 2.5, 16, 100, 256, 1000, 1024, 5000, 10_000, 20_000, r.int(0, 20_000)]),
  );

function leaf(r: Rng, v: Vocabulary, defaultPath: string | undefined): QueryNode {
  const kind = r.int(0, 11);
  if (kind <= 2) {
    const field = r.pick(TEXT_FIELDS);
    const t = textValue(r, v);
    return Q.term(field === null && defaultPath ? null : field, t.value, t);
  }
  if (kind <= 4) {
    const field = r.pick(Object.keys(KEYWORD_VALUES));
    const value = r.pick(KEYWORD_VALUES[field]);
    return r.chance(0.25)
      ? Q.term(field, globOf(r, value), { wildcard: true })
      : Q.term(field, value, { phrase: r.chance(0.2) });
  }
  if (kind === 5) {
    const field = r.pick(['id', 'parent']);
    const id = r.pick(v.ids);
    return r.chance(0.3) ? Q.term(field, `${id.slice(0, r.int(8, 12))}*`, { wildcard: true }) : Q.term(field, id);
  }
  if (kind === 6) {
    const field = r.pick(NUMBER_FIELDS);
    if (r.chance(0.4)) return Q.term(field, r.chance(0.9) ? numberAt(r) : 'abc');
    const lo = r.chance(0.2) ? null : numberAt(r);
    const hi = r.chance(0.2) ? null : r.chance(0.9) ? numberAt(r) : 'zz';
    return Q.range(field, lo, hi ?? (lo === null ? '100' : null), r.chance(0.5), r.chance(0.5));
  }
  if (kind === 7) {
    const field = r.pick(['created_at', 'updated_at']);
    if (r.chance(0.4))
      return r.chance(0.15)
        ? Q.term(field, `${dateAt(r, v).slice(0, 6)}*`, { wildcard: true })
        : Q.term(field, dateAt(r, v));
    const lo = r.chance(0.2) ? null : dateAt(r, v);
    const hi = r.chance(0.2) ? null : r.chance(0.95) ? dateAt(r, v) : 'not-a-date';
    return Q.range(field, lo, hi ?? (lo === null ? '2024' : null), r.chance(0.5), r.chance(0.5));
  }
  if (kind === 8) {
    // string ranges: keyword columns, tags, refs, families, whole result/prompt texts
    const field = r.pick([
      'status',
      'modelId',
      'tags',
      'interaction',
      'environment',
      'parameters.topic',
      'parameters.customer.id',
      'config.model',
      'result',
      'prompt',
      'parameters.numstr',
      'id',
    ]);
    const b = () =>
      r.pick([
        'a',
        'b',
        'c',
        'completed',
        'g',
        'gpt',
        'Hello',
        'S',
        'Say',
        'hello',
        'ix',
        'm',
        'z',
        'é',
        '日',
        '3',
        '10',
        'C-1',
        '',
      ]);
    const lo = r.chance(0.2) ? null : b();
    const hi = r.chance(0.2) ? null : b();
    return Q.range(field, lo, hi ?? (lo === null ? 'm' : null), r.chance(0.5), r.chance(0.5));
  }
  if (kind === 9) return Q.exists(r.pick(EXISTS_FIELDS));
  if (kind === 10)
    return Q.term(r.pick(['parameters.flag', 'config.stream', 'parameters.list']), r.pick(['true', 'false', 'True']));
  return Q.term(null, textValue(r, v).value);
}

/** A random query of depth ≤ 3 over the vocabulary. */
export function randomQuery(r: Rng, v: Vocabulary, defaultPath: string | undefined, depth = 0): QueryNode {
  if (depth >= 3 || r.chance(0.45)) return leaf(r, v, defaultPath);
  const n = r.int(2, 3);
  const kids = Array.from({ length: n }, () => randomQuery(r, v, defaultPath, depth + 1));
  const roll = r();
  return roll < 0.4 ? Q.and(...kids) : roll < 0.8 ? Q.or(...kids) : Q.not(kids[0]);
}

export const DEFAULT_PATHS = [
  undefined,
  undefined,
  undefined,
  undefined,
  'tags',
  'result',
  'prompt',
  'parameters.topic',
  'parameters',
  'updated_at',
  'token_use.total',
  'interaction',
  'config.model',
  'status',
];

// ---- facets, computed in TypeScript ---------------------------------------------------------

export type FacetValue = string | number | null;

/** A facetable field's values in a run document (the facet's `_id`s). */
function facetValues(doc: Record<string, unknown>, field: string): FacetValue[] {
  const ref = (x: unknown) => (x && typeof x === 'object' ? (x as { id: string }).id : null);
  switch (field) {
    case 'tags':
      return doc.tags as string[];
    case 'environment':
      return [ref(doc.environment)];
    case 'interaction':
      return [ref(doc.interaction)];
    case 'modelId':
      return [(doc.modelId as string | null) ?? null];
    case 'status':
      return [doc.status as string];
    case 'finish_reason':
      return [(doc.finish_reason as string | undefined) ?? null];
    case 'execution_time':
      return [(doc.execution_time as number | undefined) ?? null];
    case 'updated_at':
      return [doc.updated_at as string];
    case 'tool_use.tool_name':
      return [...new Set(((doc.tool_use as { tool_name: string }[] | undefined) ?? []).map((t) => t.tool_name))];
    default:
      throw new Error(field);
  }
}

/** Most frequent first, ties by value (code points), null last; `withNull` keeps the null bucket. */
export function valueBuckets(docs: Record<string, unknown>[], field: string, limit: number, withNull: boolean) {
  const counts = new Map<FacetValue, number>();
  for (const d of docs)
    for (const v of facetValues(d, field)) if (v !== null || withNull) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts]
    .map(([k, n]) => ({ _id: k === null ? null : String(k), count: n }))
    .sort((a, b) => b.count - a.count || (a._id === null ? 1 : b._id === null ? -1 : compareCodePoints(a._id, b._id)))
    .slice(0, limit);
}

/** [lower, upper) buckets in order, then the default bucket (outside, or no value) when named. */
export function rangeBuckets(
  docs: Record<string, unknown>[],
  field: string,
  boundaries: (number | string)[],
  defaultName?: string,
) {
  const at = (x: number | string) => (typeof x === 'number' ? x : parseDateInterval(x)!.from);
  const counts = boundaries.slice(0, -1).map(() => 0);
  let outside = 0;
  for (const d of docs) {
    const v = facetValues(d, field)[0];
    const x = v === null ? null : typeof v === 'number' ? v : Date.parse(v as string);
    const i =
      x === null
        ? -1
        : boundaries.findIndex((b, j) => j < boundaries.length - 1 && x >= at(b) && x < at(boundaries[j + 1]));
    if (i >= 0) counts[i]++;
    else outside++;
  }
  return [
    ...counts.map((count, i) => ({ _id: boundaries[i], count })),
    ...(defaultName !== undefined ? [{ _id: defaultName, count: outside }] : []),
  ];
}
