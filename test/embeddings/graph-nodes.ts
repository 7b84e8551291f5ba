/**
 * Servers for the persisted-graph tests (issue 20): started on a given data folder and database so
 * they can be restarted on the same ones, with the exact-scan threshold lowered (40) so small
 * partitions use HNSW; their graph metrics; seeded vectors and objects.
 */
import assert from 'node:assert/strict';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildServer, type Orrery } from '../../src/server.ts';
import { sleep } from './helpers.ts';

export const MODEL = 'orrery-hashed-ngrams-384';
/** Past 2 × (2 × 20 + 16): a search of 20 (the smallest list) asks the graph rather than scanning. */
export const N = 130;

/** Seeded unit vectors of 384 dimensions. */
export function vector(seed: number): number[] {
  let a = (seed * 2654435761) >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  const v = Array.from({ length: 384 }, next);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

export interface Node {
  orrery: Orrery;
  url: string;
  key: string;
  /** With the admin key, or `token` (a key or JWT of another project). */
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
  metric(name: string, labels: string): Promise<number>;
  close(): Promise<void>;
}

/** A server on a given data folder and database (so it can be restarted on the same ones). */
export async function startNode(
  dataDir: string,
  databaseUrl: string | undefined,
  overrides: Partial<Config> = {},
  adminKey?: string,
): Promise<Node> {
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl,
      logLevel: 'silent',
      vectorExactThreshold: 40,
      vectorGraphPollMs: 100,
      ...overrides,
    },
  );
  const orrery = await buildServer(config, { logger: false });
  const url = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
  const key = adminKey ?? orrery.bootstrap.key!;
  const api = async (method: string, path: string, body?: unknown, token = key) => {
    const res = await fetch(url + path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const metric = async (name: string, labels: string) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    return line ? Number(line.split(' ').pop()) : 0;
  };
  return { orrery, url, key, api, metric, close: () => orrery.app.close() };
}

export const graphEvents = (n: Node, event: string) => n.metric('orrery_vector_graph_events_total', `event="${event}"`);
export const searches = (n: Node, mode: string) => n.metric('orrery_vector_searches_total', `mode="${mode}"`);

export async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The id of the nearest object to `values` (by the text vectors). */
export async function nearest(
  n: Node,
  values: number[],
  token?: string,
): Promise<{ id: string; score: number } | undefined> {
  const r = await n.api(
    'POST',
    '/api/v1/objects/search',
    { query: { vector: { values, type: 'text' } }, limit: 1 },
    token,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.results[0];
}

export async function createObject(n: Node, seed: number, token?: string): Promise<string> {
  const r = await n.api(
    'POST',
    '/api/v1/objects',
    { name: `v${seed}`, embeddings: { text: { model: MODEL, values: vector(seed) } } },
    token,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id;
}
