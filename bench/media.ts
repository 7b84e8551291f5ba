/**
 * Media inputs: a run with one 12-megapixel JPEG (4,000 × 3,000) on a local OpenAI-compatible
 * upstream (bench/lib/openai-upstream.ts), `gpt-4o`, whose 2,048 px bound makes Orrery convert
 * it (src/media/convert.ts) in a content worker process. In each round:
 *  - first: a new object of the same bytes (a cache miss: its conversion runs);
 *  - repeated: N runs with that object (the conversion comes from the cache);
 *  - text: N runs of the same interaction without the image;
 * repeated and text runs alternate. Server CPU per run counts the server process and its content
 * worker processes (alive ones, and those it reaped). The added latency is the round's repeated
 * p50 less its text p50 (paired), its median over the rounds reported. Objects are processed
 * (renditions) before a round starts, so that work is not in the figures.
 *
 *   npm run bench -- media        (ROUNDS=5 N=20 by default)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { machine, startChild, startOrrery } from './lib/processes.ts';
import { api, median } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const N = Number(process.env.N ?? 20);
const TICK_US = 10_000;
/** CPU per run as a mean: /proc counts in 10 ms ticks, so a lone run's figure is 0 or 10 ms. */
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** utime, stime, cutime, cstime of a process, in µs. */
const stat = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(') ') + 2).split(' ');
  return {
    own: (Number(f[11]) + Number(f[12])) * TICK_US,
    reaped: (Number(f[13]) + Number(f[14])) * TICK_US,
    ppid: Number(f[1]),
  };
};
/** CPU of the server and its worker processes so far (alive children's own, exited ones' through the parent), µs. */
const serverCpuUs = (pid: number) => {
  const s = stat(pid);
  let total = s.own + s.reaped;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const c = stat(Number(name));
      if (c.ppid === pid) total += c.own + c.reaped;
    } catch {
      // ended meanwhile
    }
  }
  return total;
};

/** A photo-like 12-megapixel JPEG: a smooth gradient with fine noise (about 3 MB at q90). */
async function photo(): Promise<Buffer> {
  const width = 4000;
  const height = 3000;
  const noise = randomBytes(width * height * 3);
  for (let i = 0; i < noise.length; i += 3) {
    const x = (i / 3) % width;
    const y = Math.floor(i / 3 / width);
    noise[i] = (x * 255) / width + (noise[i]! & 15);
    noise[i + 1] = (y * 255) / height + (noise[i + 1]! & 15);
    noise[i + 2] = 128 + (noise[i + 2]! & 15);
  }
  return sharp(noise, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

const upstream = await startChild(['bench/lib/openai-upstream.ts'], {}, '/health');
const orrery = await startOrrery();
try {
  const key = orrery.adminKey;
  const auth = { authorization: `Bearer ${key}` };
  const env = await api(orrery.url, key, '/api/v1/environments', {
    name: 'bench upstream',
    provider: 'openai_compatible',
    endpoint_url: `${upstream.url}/v1`,
    api_key: 'sk-upstream',
  });
  const interaction = (
    await api(orrery.url, key, '/api/v1/interactions', {
      name: 'Describe',
      environment: env.id,
      model: 'gpt-4o',
      interaction_schema: { type: 'object', properties: { photo: { type: 'string', editor: 'media' } } },
      prompts: [{ type: 'template', template: { role: 'user', content: 'Describe it.', content_type: 'text' } }],
    })
  ).id as string;
  const jpeg = await photo();
  /** The converted JPEG's size, as the runs record it. */
  let sentBytes = 0;

  const newObject = async (): Promise<string> => {
    const up = await api(orrery.url, key, '/api/v1/objects/upload-url', { name: 'photo.jpg' });
    const put = await fetch(up.url, { method: 'PUT', body: jpeg });
    if (!put.ok) throw new Error(`upload: ${put.status}`);
    await put.arrayBuffer();
    const obj = await api(orrery.url, key, '/api/v1/objects', {
      name: 'photo.jpg',
      content: { source: up.id, type: 'image/jpeg' },
    });
    // Wait for its processing (renditions): that work is not a run's.
    for (let i = 0; i < 600; i++) {
      const r = (await (await fetch(`${orrery.url}/api/v1/objects/${obj.id}`, { headers: auth })).json()) as any;
      if (r.status === 'ready' || r.status === 'failed') return obj.id as string;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`object ${obj.id} was not processed within 60 s`);
  };

  /** One blocking run: its latency and the server's CPU (workers included) it took. */
  const run = async (data: Record<string, string>, check?: (run: any) => void) => {
    const c0 = serverCpuUs(orrery.proc.pid!);
    const t = performance.now();
    const res = await fetch(`${orrery.url}/api/v1/runs`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ interaction, data }),
    });
    const body = (await res.json()) as any;
    const ms = performance.now() - t;
    if (body.status !== 'completed') throw new Error(`a run answered ${JSON.stringify(body).slice(0, 300)}`);
    check?.(body);
    return { ms, cpuMs: (serverCpuUs(orrery.proc.pid!) - c0) / 1000 };
  };
  /** The run's stored image part says whether the conversion ran (`cached: false`) or came from the cache. */
  const converted = (cached: boolean) => (body: any) => {
    const c = body.prompt?.at(-1)?.content?.[1]?.object?.converted;
    sentBytes = c?.size ?? sentBytes;
    if (c?.cached !== cached)
      throw new Error(`expected a ${cached ? 'cached' : 'new'} conversion, got ${JSON.stringify(c)}`);
  };

  // Warm-up: the worker processes started, sharp loaded, the statements prepared.
  const warm = await newObject();
  await run({ photo: `store:${warm}` });
  for (let i = 0; i < 5; i++) {
    await run({ photo: `store:${warm}` });
    await run({});
  }

  const rounds: {
    first: { ms: number; cpuMs: number };
    repeated: number[];
    text: number[];
    rCpu: number[];
    tCpu: number[];
  }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const id = await newObject();
    const first = await run({ photo: `store:${id}` }, converted(false));
    const round = { first, repeated: [] as number[], text: [] as number[], rCpu: [] as number[], tCpu: [] as number[] };
    for (let i = 0; i < N; i++) {
      const pair = i % 2 ? (['text', 'repeated'] as const) : (['repeated', 'text'] as const);
      for (const kind of pair) {
        const m = kind === 'repeated' ? await run({ photo: `store:${id}` }, converted(true)) : await run({});
        (kind === 'repeated' ? round.repeated : round.text).push(m.ms);
        (kind === 'repeated' ? round.rCpu : round.tCpu).push(m.cpuMs);
      }
    }
    rounds.push(round);
    console.log(
      `round ${r + 1}: first ${first.ms.toFixed(1)} ms (CPU ${first.cpuMs.toFixed(0)} ms) | repeated p50 ${median(round.repeated).toFixed(2)} ms ` +
        `(CPU ${mean(round.rCpu).toFixed(1)} ms) | text p50 ${median(round.text).toFixed(2)} ms (CPU ${mean(round.tCpu).toFixed(1)} ms)`,
    );
  }
  const m = (f: (x: (typeof rounds)[number]) => number) => +median(rounds.map(f)).toFixed(2);
  console.log(
    JSON.stringify({
      bench: 'media',
      machine: machine(),
      date: new Date().toISOString().slice(0, 10),
      rounds: ROUNDS,
      n: N,
      jpeg_bytes: jpeg.length,
      sent_bytes: sentBytes,
      first_ms: m((x) => x.first.ms),
      first_cpu_ms: m((x) => x.first.cpuMs),
      repeated_p50_ms: m((x) => median(x.repeated)),
      repeated_cpu_ms: m((x) => mean(x.rCpu)),
      text_p50_ms: m((x) => median(x.text)),
      text_cpu_ms: m((x) => mean(x.tCpu)),
      added_p50_ms_paired_median: m((x) => median(x.repeated) - median(x.text)),
    }),
  );
} finally {
  await orrery.stop();
  await upstream.stop();
}
