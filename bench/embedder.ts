/**
 * `npm run bench -- embedder`: what the built-in embedder (hashed n-grams) costs a run on its hot
 * path. Per ROUNDS (5) rounds of N (20,000) short texts after a warm-up: CPU µs per text, and the
 * event loop's longest delay while another N are embedded in slices of SLICE (50) texts between
 * timer turns, as a server embedding run texts beside requests would (perf_hooks
 * monitorEventLoopDelay). The suite asserts what the embedder answers; its speed is measured here.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { HashedNgramsEmbedder } from '../src/embeddings/hashed-ngrams.ts';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SLICE = Number(process.env.SLICE ?? 50);
const TEXT =
  'Summarise the orbits of the outer planets in one line: Jupiter, Saturn, Uranus and Neptune travel on long, slow paths around the Sun, for 12 to 165 years.';

const embedder = new HashedNgramsEmbedder();
for (let i = 0; i < 2000; i++) embedder.embedNow(TEXT + i);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perText: number[] = [];
const stalls: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i++) embedder.embedNow(TEXT + round + i);
  const used = process.cpuUsage(cpu);
  perText.push((used.user + used.system) / N);

  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  for (let i = 0; i < N; i += SLICE) {
    for (let j = i; j < Math.min(N, i + SLICE); j++) embedder.embedNow(TEXT + j);
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 5));
  loop.disable();
  stalls.push(loop.max / 1e6);
  console.log(
    `round ${round + 1}: ${perText[round].toFixed(1)} µs CPU per text; longest event-loop delay ${stalls[round].toFixed(1)} ms (slices of ${SLICE})`,
  );
}
console.log(
  `\nbuilt-in embedder: median ${median(perText).toFixed(1)} µs CPU per text, longest event-loop delay ${median(stalls).toFixed(1)} ms (median of ${ROUNDS} rounds of ${N} texts)`,
);
