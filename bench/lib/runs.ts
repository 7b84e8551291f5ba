/** What the run benchmarks share: seeding an interaction on the `test` provider, and one load round with CPU accounting. */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import type { Child } from './processes.ts';

/** Connections of a load round (`CONNECTIONS=1`: every run alone, the latency of a lone run). */
export const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);

export async function api(base: string, key: string, path: string, body: unknown) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as any;
}

/** An environment on the `test` provider (`echo`, one chunk every `chunkDelayMs`) and an interaction on it; answers the interaction id. */
export async function seed(orrery: { url: string; adminKey: string }, chunkDelayMs = 0): Promise<string> {
  const env = await api(orrery.url, orrery.adminKey, '/api/v1/environments', {
    name: 'bench',
    provider: 'test',
    default_model: 'echo',
    config: { chunk_delay_ms: chunkDelayMs },
  });
  const ix = await api(orrery.url, orrery.adminKey, '/api/v1/interactions', {
    name: `Bench ${chunkDelayMs}`,
    environment: env.id,
    prompts: [
      {
        type: 'template',
        template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' },
      },
    ],
  });
  return ix.id as string;
}

/** An `openai_compatible` environment on a local OpenAI-compatible server and the same interaction on it; answers the interaction id. */
export async function seedUpstream(
  orrery: { url: string; adminKey: string },
  upstream: { url: string },
): Promise<string> {
  const env = await api(orrery.url, orrery.adminKey, '/api/v1/environments', {
    name: 'bench upstream',
    provider: 'openai_compatible',
    default_model: 'gpt-4o-mini',
    endpoint_url: `${upstream.url}/v1`,
    api_key: 'sk-upstream',
  });
  const ix = await api(orrery.url, orrery.adminKey, '/api/v1/interactions', {
    name: 'Bench upstream',
    environment: env.id,
    prompts: [
      {
        type: 'template',
        template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' },
      },
    ],
  });
  return ix.id as string;
}

/** The body of a blocking run of the seeded interaction. */
export const runBody = (interaction: string) =>
  JSON.stringify({ interaction, data: { topic: 'the orbits of the outer planets' }, tags: ['bench'] });

/**
 * `serverUs` / `loaderUs`: CPU time (all threads, user + system) per request of the server and of
 * autocannon. `mainUs`: the server's main thread alone (HTTP), so a change that moves work between
 * it and the other threads (the run writer's, SQLite's checkpoints, V8's) shows as such.
 */
export interface Round {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
  serverUs: number;
  mainUs: number;
  loaderUs: number;
}

/** CPU time so far from a /proc `stat` file, in µs (clock ticks of 10 ms). */
const statUs = (file: string) => {
  const text = readFileSync(file, 'utf8');
  const f = text.slice(text.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};
/** CPU time of a process so far, all threads. */
const cpuUs = (pid: number) => statUs(`/proc/${pid}/stat`);
/** CPU time of a process's main thread so far (its task id is its pid). */
const mainThreadUs = (pid: number) => statUs(`/proc/${pid}/task/${pid}/stat`);

/** One round of POSTs at CONNECTIONS connections for `duration` seconds. */
export const load = (url: string, body: string, headers: Record<string, string>, server: Child, duration: number) =>
  new Promise<Round>((resolve, reject) => {
    const s0 = cpuUs(server.proc.pid!);
    const m0 = mainThreadUs(server.proc.pid!);
    const l0 = cpuUs(process.pid);
    autocannon(
      {
        url,
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
        connections: CONNECTIONS,
        duration,
      },
      (err, r) => {
        if (err) return reject(err);
        const n = Math.max(1, r.requests.total);
        resolve({
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          ok: r['2xx'],
          errors: r.non2xx + r.errors + r.timeouts,
          serverUs: Math.round((cpuUs(server.proc.pid!) - s0) / n),
          mainUs: Math.round((mainThreadUs(server.proc.pid!) - m0) / n),
          loaderUs: Math.round((cpuUs(process.pid) - l0) / n),
        });
      },
    );
  });

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
