/**
 * Issue 6 benchmark: content processing, end to end through HTTP (upload, create, poll until
 * ready), with Orrery in a child process on SQLite.
 *
 * 1. Throughput: a mix of small documents (TXT, Markdown, HTML, CSV, JSON, 3-page PDF, DOCX, XLSX,
 *    PPTX, a 1200×800 PNG), COUNT objects created at once: objects processed per second, from the
 *    first create to the last `ready`, with ORRERY_CONTENT_WORKERS=WORKERS.
 * 2. One 300-page PDF, then one 50-megapixel (8660×5774) PNG, each alone: seconds from create to
 *    `ready` (text, metadata, renditions, tokens) and the server's peak RSS while processing it
 *    (VmHWM, reset before each through /proc/<pid>/clear_refs; worker threads share the process).
 *
 *   npm run bench -- content            (COUNT=200 WORKERS=2 by default)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import sharp from 'sharp';
import { machine, startOrrery, type Child } from './lib/processes.ts';
import { makeDocx, makePdf, makePptx, makeXlsx, HTML } from '../test/content/helpers.ts';

const COUNT = Number(process.env.COUNT ?? 200);
const WORKERS = process.env.WORKERS ?? '2';

type Orrery = Child & { adminKey: string };

async function call(o: Orrery, method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(o.url + path, {
    method,
    headers: {
      authorization: `Bearer ${o.adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

async function create(o: Orrery, name: string, bytes: Buffer): Promise<string> {
  const up = await call(o, 'POST', '/api/v1/objects/upload-url', { name });
  const put = await fetch(up.url, { method: 'PUT', body: bytes });
  if (!put.ok) throw new Error(`PUT ${name}: ${put.status}`);
  await put.arrayBuffer();
  return (await call(o, 'POST', '/api/v1/objects', { name, content: { source: up.id } })).id;
}

async function untilDone(o: Orrery, id: string): Promise<any> {
  for (;;) {
    const obj = await call(o, 'GET', `/api/v1/objects/${id}`);
    if (obj.status === 'ready') return obj;
    if (obj.status === 'failed') throw new Error(`${id} failed: ${JSON.stringify(obj.error)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const resetPeak = (o: Orrery) => writeFileSync(`/proc/${o.proc.pid}/clear_refs`, '5');
const mb = (b: number) => Math.round(b / 1024 / 1024);
const rss = (o: Orrery) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${o.proc.pid}/status`, 'utf8'))![1]) * 1024;

async function main() {
  const o = (await startOrrery({ ORRERY_CONTENT_WORKERS: WORKERS, ORRERY_MAX_UPLOAD_SIZE: '1GB' })) as Orrery;
  try {
    const png = await sharp({
      create: { width: 1200, height: 800, channels: 3, background: { r: 90, g: 140, b: 200 } },
    })
      .png()
      .toBuffer();
    const para =
      'Orrery turns uploaded files into text, metadata, renditions and token counts for language model applications. ';
    const mix: Array<[string, Buffer]> = [
      ['note.txt', Buffer.from(para.repeat(20))],
      ['readme.md', Buffer.from(`# Notes\n\n${para.repeat(10)}\n\n- one\n- two\n`)],
      ['page.html', Buffer.from(HTML)],
      ['table.csv', Buffer.from(Array.from({ length: 200 }, (_, i) => `${i},item ${i},${i * 3.5}`).join('\n'))],
      [
        'data.json',
        Buffer.from(JSON.stringify({ items: Array.from({ length: 100 }, (_, i) => ({ i, name: `n${i}` })) })),
      ],
      ['paper.pdf', await makePdf(3)],
      ['report.docx', await makeDocx()],
      ['book.xlsx', await makeXlsx()],
      ['deck.pptx', await makePptx()],
      ['image.png', png],
    ];
    // Warm-up: worker threads start and load their libraries once.
    await Promise.all(mix.map(async ([n, b]) => untilDone(o, await create(o, n, b))));

    const uploads = await Promise.all(
      Array.from({ length: COUNT }, async (_, i) => {
        const [name, bytes] = mix[i % mix.length];
        const up = await call(o, 'POST', '/api/v1/objects/upload-url', { name });
        await (await fetch(up.url, { method: 'PUT', body: bytes })).arrayBuffer();
        return { name, source: up.id as string };
      }),
    );
    const t0 = performance.now();
    const ids = await Promise.all(
      uploads.map(
        async (u) =>
          (await call(o, 'POST', '/api/v1/objects', { name: u.name, content: { source: u.source } })).id as string,
      ),
    );
    // One count query every 50 ms (polling each object would load the server more than the work does).
    const warm = mix.length;
    for (;;) {
      const [ready, failed] = await Promise.all(
        ['ready', 'failed'].map(
          async (status) => (await call(o, 'POST', '/api/v1/objects/count', { query: { status } })).count as number,
        ),
      );
      if (failed) throw new Error(`${failed} objects failed`);
      if (ready >= warm + ids.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    const perSecond = COUNT / seconds;
    console.log(
      `mix of small documents: ${COUNT} objects in ${seconds.toFixed(2)} s = ${perSecond.toFixed(1)} objects/s (${WORKERS} workers)`,
    );

    const big: Array<[string, () => Promise<Buffer>]> = [
      [
        '300-page.pdf',
        () =>
          makePdf(300, (n) => Array.from({ length: 30 }, (_, l) => `Page ${n}, line ${l + 1}: ${para.slice(0, 70)}`)),
      ],
      [
        '50-megapixel.png',
        () =>
          sharp({
            create: {
              width: 8660,
              height: 5774,
              channels: 3,
              background: { r: 0, g: 0, b: 0 },
              noise: { type: 'gaussian', mean: 128, sigma: 30 },
            },
          })
            .png({ compressionLevel: 1 })
            .toBuffer(),
      ],
    ];
    const heavy: Record<
      string,
      { seconds: number; peakRssMb: number; rssBeforeMb: number; bytes: number; detail: string }
    > = {};
    for (const [name, make] of big) {
      const bytes = await make();
      const up = await call(o, 'POST', '/api/v1/objects/upload-url', { name });
      await (await fetch(up.url, { method: 'PUT', body: bytes })).arrayBuffer();
      await new Promise((r) => setTimeout(r, 500));
      const before = rss(o);
      resetPeak(o);
      const t = performance.now();
      const id = (await call(o, 'POST', '/api/v1/objects', { name, content: { source: up.id } })).id;
      const obj = await untilDone(o, id);
      const s = (performance.now() - t) / 1000;
      const detail = obj.metadata.page_count
        ? `${obj.metadata.page_count} pages, ${obj.tokens.count} tokens`
        : `${obj.metadata.dimensions.width}×${obj.metadata.dimensions.height}, ${obj.metadata.renditions.length} renditions`;
      heavy[name] = {
        seconds: Number(s.toFixed(2)),
        peakRssMb: mb(o.peakRss()),
        rssBeforeMb: mb(before),
        bytes: bytes.length,
        detail,
      };
      console.log(
        `${name} (${mb(bytes.length)} MB): ${s.toFixed(2)} s to ready, peak RSS ${mb(o.peakRss())} MB (${mb(before)} MB before) (${detail})`,
      );
    }
    console.log(
      JSON.stringify({
        bench: 'content',
        machine: machine(),
        date: new Date().toISOString(),
        workers: Number(WORKERS),
        count: COUNT,
        objectsPerSecond: Number(perSecond.toFixed(1)),
        heavy,
      }),
    );
  } finally {
    await o.stop();
  }
}

await main();
