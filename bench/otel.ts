/**
 * Issue 58 benchmark: blocking POST /runs on the offline `test` provider, with every run traced
 * (OTLP/HTTP protobuf to a local collector in this process, which reads each request and answers
 * 200) against the same server without OTEL_* settings, in alternating rounds (the machine is
 * noisy): runs per second at 32 connections, and the ratio (the issue asks for at least 90 %).
 *
 *   npm run bench -- otel            (ROUNDS=3 DURATION=8 by default)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOrrery } from './lib/processes.ts';
import { load, median, runBody, seed } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 8);

let exports = 0;
let exportedBytes = 0;
const collector = createServer((req, res) => {
  req.on('data', (b: Buffer) => (exportedBytes += b.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
    res.end();
  });
});
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

const plain = await startOrrery();
const traced = await startOrrery({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRIC_EXPORT_INTERVAL: '5000' });
try {
  const bodies = { plain: runBody(await seed(plain)), traced: runBody(await seed(traced)) };
  const round = (which: 'plain' | 'traced') => {
    const server = which === 'plain' ? plain : traced;
    return load(
      `${server.url}/api/v1/runs`,
      bodies[which],
      { authorization: `Bearer ${server.adminKey}` },
      server,
      DURATION,
    );
  };
  await round('plain'); // warm-up (JIT, caches, SQLite pages)
  await round('traced');
  const ratios: number[] = [];
  // Server CPU per run, traced / untraced: steadier than throughput on a shared machine.
  const cpu: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so neither always gets the quieter half of a round.
    const [first, second] = i % 2 ? (['traced', 'plain'] as const) : (['plain', 'traced'] as const);
    const a = await round(first);
    const b = await round(second);
    const p = first === 'plain' ? a : b;
    const t = first === 'plain' ? b : a;
    ratios.push(t.rps / p.rps);
    cpu.push(t.serverUs / p.serverUs);
    console.log(
      `round ${i + 1}: without ${p.rps.toFixed(0)} runs/s p50 ${p.p50} p99 ${p.p99} ms, server CPU ${p.serverUs} µs/run (main thread ${p.mainUs}) | ` +
        `traced ${t.rps.toFixed(0)} runs/s p50 ${t.p50} p99 ${t.p99} ms, server CPU ${t.serverUs} µs/run (main thread ${t.mainUs}), errors ${t.errors} | ${(100 * (t.rps / p.rps)).toFixed(1)} %`,
    );
  }
  const metrics = await (await fetch(`${traced.url}/metrics`)).text();
  const dropped = /orrery_otel_spans_dropped_total (\d+)/.exec(metrics)?.[1];
  console.log(
    `traced / untraced throughput, median of ${ROUNDS} paired rounds: ${(100 * median(ratios)).toFixed(1)} % (at least 90 % asked); ` +
      `server CPU per run ${median(cpu).toFixed(2)}x; ` +
      `${exports} exports, ${(exportedBytes / 1e6).toFixed(1)} MB to the collector, ${dropped} spans dropped`,
  );
} finally {
  await plain.stop();
  await traced.stop();
  collector.close();
}
