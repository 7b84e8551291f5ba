/**
 * Images fitted to each provider's limits: an image within them goes byte for byte; a larger one,
 * an animation, TIFF, SVG and AVIF are converted to JPEG q85 in the content workers, once per
 * object version and provider form (the run's stored part says whether it came from the cache).
 * HEIC goes as it is where the provider takes it, else a 415. Hostile files (a decompression bomb,
 * a truncated file, an SVG naming an external resource) are clean 4xx before any provider call.
 * Through the official client on both databases, against loopback wire servers.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { startVertexWireServer, type VertexWireServer } from '../support/vertex-wire-server.ts';
import { processed, upload } from '../objects/helpers.ts';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCHEMA = { type: 'object', properties: { photo: { type: 'string', editor: 'media' } } };

/** A noisy image (so that its JPEG is not trivially small), as PNG. */
async function noisyPng(width: number, height: number): Promise<Buffer> {
  const raw = randomBytes(width * height * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

const solid = (width: number, height: number, background: string) =>
  sharp({ create: { width, height, channels: 3, background } });

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: images fitted to their provider`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    let vertex: VertexWireServer;
    let oa: string;
    let an: string;
    let gem: string;

    const object = async (name: string, bytes: Buffer, type: string) => {
      const up = await upload(srv, name, bytes, { type });
      const r = await srv.api('POST', '/api/v1/objects', { name, content: { source: up.id, type, name } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const interaction = async (env: Record<string, unknown>, model: string) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `${String(env.provider)} fit`, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: `Fit ${model}`,
        environment: e.body.id,
        model,
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'Look', content_type: 'text' } }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    /** The image OpenAI was sent last, decoded from its data URL. */
    const sentToOpenAI = () => {
      const url: string = (openai.requests.at(-1)!.body as any).messages.at(-1).content[1].image_url.url;
      const m = /^data:([^;]+);base64,(.*)$/.exec(url)!;
      return { type: m[1], bytes: Buffer.from(m[2], 'base64') };
    };
    /** Runs `ix` with the object; the run's stored part of it. */
    const run = async (ix: string, photo: string) => {
      const r = await srv.client().interactions.execute(ix, { data: { photo } });
      assert.equal(r.status, 'completed', JSON.stringify(r.error));
      const stored = await srv.api('GET', `/api/v1/runs/${r.id}`);
      return stored.body.prompt.at(-1).content[1];
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      anthropic = await startAnthropicWireServer({ apiKey: null });
      vertex = await startVertexWireServer({ text: 'seen' });
      oa = await interaction({ provider: 'openai_compatible', endpoint_url: openai.url, api_key: 'k' }, 'gpt-4o');
      an = await interaction({ provider: 'anthropic', endpoint_url: anthropic.url, api_key: 'k' }, 'claude-sonnet-4-5');
      gem = await interaction(
        { provider: 'vertexai', endpoint_url: vertex.origin, apiKey: vertex.serviceAccount() },
        'gemini-2.5-flash',
      );
    });
    after(async () => {
      await srv.close();
      await openai.close();
      await anthropic.close();
      await vertex.close();
    });

    it('resizes a large image to 2,048 px for OpenAI and 1,568 px for Anthropic, converting once per form', async () => {
      const big = await noisyPng(3000, 1500);
      const id = await object('wide.png', big, 'image/png');

      const first = await run(oa, `store:${id}`);
      const sent = sentToOpenAI();
      assert.equal(sent.type, 'image/jpeg');
      const meta = await sharp(sent.bytes).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 2048, 1024]);
      assert.ok(sent.bytes.length <= 5 * 1024 ** 2);
      assert.equal(first.url, `store:${id}`);
      assert.equal(first.object.size, big.length, 'the stored part names the object as stored');
      assert.deepEqual(first.object.converted, {
        form: 'jpeg85-2048px-5242880b',
        type: 'image/jpeg',
        size: sent.bytes.length,
        width: 2048,
        height: 1024,
        cached: false,
      });

      // The same object and form again: no conversion, the cached bytes are sent.
      const second = await run(oa, `store:${id}`);
      assert.equal(second.object.converted.cached, true);
      assert.deepEqual(sentToOpenAI().bytes, sent.bytes);

      // Anthropic's form is another: converted once for it, then cached too.
      const claude = await run(an, `store:${id}`);
      assert.equal(claude.object.converted.cached, false);
      assert.equal(claude.object.converted.form, 'jpeg85-1568px-5242880b');
      const block = (anthropic.requests.at(-1)!.body as any).messages.at(-1).content[1];
      assert.equal(block.source.media_type, 'image/jpeg');
      const cm = await sharp(Buffer.from(block.source.data, 'base64')).metadata();
      assert.deepEqual([cm.width, cm.height], [1568, 784]);
      assert.equal((await run(an, `store:${id}`)).object.converted.cached, true);
    });

    it('a processed object converted before is sent from the cache, the same bytes, with the same stored part', async () => {
      const big = await noisyPng(2500, 500);
      const id = await object('processed.png', big, 'image/png');
      const done = await processed(srv, id);
      assert.equal(done.status, 'ready', JSON.stringify(done.error));
      const first = await run(oa, `store:${id}`);
      assert.equal(first.object.converted.cached, false);
      const bytes = sentToOpenAI().bytes;
      const again = await run(oa, `store:${id}`);
      assert.deepEqual(again, {
        ...first,
        object: { ...first.object, converted: { ...first.object.converted, cached: true } },
      });
      assert.deepEqual(sentToOpenAI().bytes, bytes);
    });

    it('sends an image within the limits byte for byte, and re-encodes one over 5 MB', async () => {
      const small = await solid(1500, 1000, '#468').jpeg().toBuffer();
      const id = await object('fits.jpg', small, 'image/jpeg');
      const part = await run(an, `store:${id}`);
      assert.equal(part.object.converted, undefined);
      const block = (anthropic.requests.at(-1)!.body as any).messages.at(-1).content[1];
      assert.deepEqual(Buffer.from(block.source.data, 'base64'), small);

      // Within 2,048 px but over 5 MB encoded: re-encoded as JPEG under 5 MB.
      const heavy = await noisyPng(2000, 1500);
      assert.ok(heavy.length > 5 * 1024 ** 2, `${heavy.length} bytes`);
      const hid = await object('heavy.png', heavy, 'image/png');
      const hp = await run(oa, `store:${hid}`);
      const sent = sentToOpenAI();
      assert.equal(sent.type, 'image/jpeg');
      assert.ok(sent.bytes.length <= 5 * 1024 ** 2, `${sent.bytes.length} bytes`);
      assert.equal(hp.object.converted.size, sent.bytes.length);
    });

    it('converts TIFF, SVG, AVIF and the first frame of animated GIF and WebP to JPEG', async () => {
      const red = await solid(40, 30, '#ff0000').png().toBuffer();
      const blue = await solid(40, 30, '#0000ff').png().toBuffer();
      const inputs: [string, Buffer, string][] = [
        ['scan.tiff', await sharp(red).tiff().toBuffer(), 'image/tiff'],
        [
          'logo.svg',
          Buffer.from(
            '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"><rect width="40" height="30" fill="#ff0000"/></svg>',
          ),
          'image/svg+xml',
        ],
        ['photo.avif', await sharp(red).avif().toBuffer(), 'image/avif'],
        [
          'anim.gif',
          await sharp([red, blue], { join: { animated: true } })
            .gif()
            .toBuffer(),
          'image/gif',
        ],
        [
          'anim.webp',
          await sharp([red, blue], { join: { animated: true } })
            .webp()
            .toBuffer(),
          'image/webp',
        ],
      ];
      for (const [name, bytes, type] of inputs) {
        const id = await object(name, bytes, type);
        const part = await run(oa, `store:${id}`);
        assert.equal(part.object.converted?.type, 'image/jpeg', name);
        const sent = sentToOpenAI();
        assert.equal(sent.type, 'image/jpeg', name);
        const { data, info } = await sharp(sent.bytes).raw().toBuffer({ resolveWithObject: true });
        assert.deepEqual([info.width, info.height], [40, 30], `${name}: one frame, its own size`);
        assert.ok(
          data[0]! > 200 && data[2]! < 60,
          `${name}: the first (red) frame, got ${data.subarray(0, 3).join(',')}`,
        );
      }
    });

    it('sends HEIC as it is to Gemini, which takes it, and refuses it for OpenAI with a 415', async () => {
      const heic = Buffer.concat([
        Buffer.from([0, 0, 0, 24]),
        Buffer.from('ftypheic\0\0\0\0mif1heic'),
        Buffer.alloc(64),
      ]);
      const id = await object('phone.heic', heic, 'image/heic');
      const r = await srv.client().interactions.execute(gem, { data: { photo: `store:${id}` } });
      assert.equal(r.status, 'completed');
      const inline = (vertex.requests.at(-1)!.body as any).contents.at(-1).parts[1].inlineData;
      assert.equal(inline.mimeType, 'image/heic');
      assert.deepEqual(Buffer.from(inline.data, 'base64'), heic);

      const before = openai.requests.length;
      const refused = await srv.api('POST', '/api/v1/runs', { interaction: oa, data: { photo: `store:${id}` } });
      assert.equal(refused.status, 415, JSON.stringify(refused.body));
      assert.match(refused.body.message, /data\.photo is image\/heic: model "gpt-4o" .* takes no HEIC/);
      assert.equal(openai.requests.length, before);
    });

    const refused = async (name: string, bytes: Buffer, type: string, status: number, pattern: RegExp) => {
      const id = await object(name, bytes, type);
      const before = openai.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: oa, data: { photo: `store:${id}` } });
      assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.message, pattern);
      assert.equal(openai.requests.length, before, `${name}: no provider call`);
    };

    it('refuses hostile images with a 4xx naming the problem, before any provider call', async () => {
      // A decompression bomb: an SVG of 60,000 × 60,000 pixels (3.6 gigapixels) in 150 bytes.
      await refused(
        'bomb.svg',
        Buffer.from(
          '<svg xmlns="http://www.w3.org/2000/svg" width="60000" height="60000"><rect width="1" height="1"/></svg>',
        ),
        'image/svg+xml',
        413,
        /data\.photo \(image\/svg\+xml\) declares more pixels than the limit of 40000000 \(ORRERY_MEDIA_MAX_PIXELS\)/,
      );
      // A truncated JPEG (within the limits, so it would go as it is) and a truncated TIFF (converted).
      const jpeg = await noisyPng(300, 200).then((b) => sharp(b).jpeg().toBuffer());
      await refused(
        'cut.jpg',
        jpeg.subarray(0, jpeg.length >> 1),
        'image/jpeg',
        422,
        /data\.photo \(image\/jpeg\) is truncated/,
      );
      const tiff = await noisyPng(300, 200).then((b) => sharp(b).tiff().toBuffer());
      await refused(
        'cut.tiff',
        tiff.subarray(0, tiff.length >> 1),
        'image/tiff',
        422,
        /data\.photo \(image\/tiff\) could not be read/,
      );
      // An SVG that would make the rasteriser read a file or a URL.
      for (const ref of ['href="file:///etc/passwd"', 'xlink:href="https://example.com/x.png"']) {
        await refused(
          'outside.svg',
          Buffer.from(
            `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><image ${ref} width="10" height="10"/></svg>`,
          ),
          'image/svg+xml',
          415,
          /data\.photo \(image\/svg\+xml\) was refused: the SVG names an external resource/,
        );
      }
    });
  });
}

describe('conversion off the event loop', () => {
  let dir: string;
  let server: ServerProcess;
  const key = 'sk-media-convert-test-key-0001';
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-media-convert-'));
    server = await startServerProcess({
      NODE_OPTIONS: '',
      NODE_TEST_CONTEXT: '',
      ORRERY_ADMIN_KEY: key,
      ORRERY_DATA_DIR: join(dir, 'data'),
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('converts in a content worker process: the server process never maps libvips', async () => {
    const tiff = await solid(3000, 200, '#2a7').tiff().toBuffer();
    const up = await api('POST', '/api/v1/objects/upload-url', { name: 'strip.tiff' });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const put = await fetch(up.body.url, { method: 'PUT', body: tiff });
    assert.equal(put.status, 200);
    await put.arrayBuffer();
    const obj = await api('POST', '/api/v1/objects', {
      name: 'strip.tiff',
      content: { source: up.body.id, type: 'image/tiff' },
    });
    assert.equal(obj.status, 200, JSON.stringify(obj.body));
    const env = await api('POST', '/api/v1/environments', { name: 'echo', provider: 'test' });
    const ix = await api('POST', '/api/v1/interactions', {
      name: 'Look',
      environment: env.body.id,
      model: 'echo',
      interaction_schema: SCHEMA,
      prompts: [{ type: 'template', template: { role: 'user', content: 'Look', content_type: 'text' } }],
    });
    assert.equal(ix.status, 200, JSON.stringify(ix.body));
    const run = await api('POST', '/api/v1/runs', { interaction: ix.body.id, data: { photo: `store:${obj.body.id}` } });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    const stored = await api('GET', `/api/v1/runs/${run.body.id}`);
    const converted = stored.body.prompt.at(-1).content[1].object.converted;
    assert.deepEqual([converted.width, converted.height, converted.cached], [2048, 137, false]);
    const libvips = readFileSync(`/proc/${server.proc.pid}/maps`, 'utf8')
      .split('\n')
      .filter((l) => /libvips|sharp-linux/.test(l));
    assert.deepEqual(libvips, [], 'the server process maps no libvips');
  });
});
