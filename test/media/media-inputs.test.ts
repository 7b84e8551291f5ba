/**
 * Media inputs reach the model: `store:<object id>` values of parameters the input schema marks
 * as media or document (also in arrays) and data: URLs become image and document parts. Through
 * the official client on both databases, against loopback wire servers whose recorded request
 * bodies are decoded and compared with the objects' bytes. The bad paths are 4xx before any
 * provider call: another project's object, a missing one, one still being uploaded, oversized and
 * corrupt images, a PDF bomb, plain text given to a media parameter, an http URL.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { secondProject, upload } from '../objects/helpers.ts';

/** A one-page PDF, and one that claims 150 pages in its page objects. */
const pdfOf = (pages: number) =>
  Buffer.from(
    `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n` +
      Array.from({ length: pages }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n`).join('') +
      'trailer << /Root 1 0 R >>\n%%EOF\n',
    'latin1',
  );

const SCHEMA = {
  type: 'object',
  properties: {
    question: { type: 'string' },
    photo: { type: 'string', editor: 'media' },
    pages: { type: 'array', items: { type: 'string', editor: 'media' } },
    contract: { type: 'string', editor: 'document' },
  },
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: media inputs reach the model`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    let png: Buffer;
    let jpeg: Buffer;
    const pdf = pdfOf(1);
    let ids: { png: string; jpeg: string; pdf: string };
    let oa: string;
    let an: string;

    const object = async (name: string, bytes: Buffer, type: string, token?: string) => {
      const up = await upload(srv, name, bytes, { type, ...(token ? { token } : {}) });
      const r = await srv.api('POST', '/api/v1/objects', { name, content: { source: up.id, type, name } }, token);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const interaction = async (env: string, model: string) => {
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: `Look ${model} ${Math.random().toString(36).slice(2, 7)}`,
        environment: env,
        model,
        interaction_schema: SCHEMA,
        prompts: [
          { type: 'template', template: { role: 'user', content: 'Q: {{question}}', content_type: 'handlebars' } },
        ],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      anthropic = await startAnthropicWireServer({ apiKey: null });
      png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#c03' } })
        .png()
        .toBuffer();
      jpeg = await sharp({ create: { width: 5, height: 9, channels: 3, background: '#09c' } })
        .jpeg()
        .toBuffer();
      ids = {
        png: await object('dot.png', png, 'image/png'),
        jpeg: await object('dot.jpg', jpeg, 'image/jpeg'),
        pdf: await object('contract.pdf', pdf, 'application/pdf'),
      };
      const envOf = async (provider: string, url: string) =>
        (
          await srv.api('POST', '/api/v1/environments', {
            name: `${provider} wire`,
            provider,
            endpoint_url: url,
            api_key: 'sk-test',
          })
        ).body.id as string;
      oa = await interaction(await envOf('openai_compatible', openai.url), 'gpt-4o-mini');
      an = await interaction(await envOf('anthropic', anthropic.url), 'claude-sonnet-4-5');
    });
    after(async () => {
      await srv.close();
      await openai.close();
      await anthropic.close();
    });

    const dataUrlBytes = (url: string, type: string) => {
      const prefix = `data:${type};base64,`;
      assert.ok(url.startsWith(prefix), url.slice(0, 40));
      return Buffer.from(url.slice(prefix.length), 'base64');
    };

    it('sends stored images and a PDF to OpenAI as image_url and file parts with the objects bytes', async () => {
      openai.requests.length = 0;
      const run = await srv.client().interactions.execute(oa, {
        data: {
          question: 'what is shown?',
          photo: `store:${ids.png}`,
          pages: [`store:${ids.jpeg}`, `data:image/png;base64,${png.toString('base64')}`],
          contract: `store:${ids.pdf}`,
        },
      });
      assert.equal(run.status, 'completed');
      const body = openai.requests.at(-1)!.body as any;
      const content = body.messages.at(-1).content;
      assert.deepEqual(content[0], { type: 'text', text: 'Q: what is shown?' });
      assert.deepEqual(
        content.map((c: any) => c.type),
        ['text', 'image_url', 'image_url', 'image_url', 'file'],
      );
      assert.deepEqual(dataUrlBytes(content[1].image_url.url, 'image/png'), png);
      assert.deepEqual(dataUrlBytes(content[2].image_url.url, 'image/jpeg'), jpeg);
      assert.deepEqual(dataUrlBytes(content[3].image_url.url, 'image/png'), png);
      assert.equal(content[4].file.filename, 'contract.pdf');
      assert.deepEqual(dataUrlBytes(content[4].file.file_data, 'application/pdf'), pdf);

      // The stored prompt keeps references, never the bytes.
      const stored = await srv.api('GET', `/api/v1/runs/${run.id}`);
      const parts = stored.body.prompt.at(-1).content;
      assert.ok(!JSON.stringify(stored.body.prompt).includes(png.toString('base64').slice(0, 40)));
      assert.deepEqual(parts[1], {
        type: 'image',
        url: `store:${ids.png}`,
        media_type: 'image/png',
        object: { id: ids.png, revision: parts[1].object.revision, type: 'image/png', size: png.length },
      });
      assert.equal(parts[3].url.startsWith('data:image/png;sha256='), true);
      assert.equal(parts[3].object.size, png.length);
      assert.equal(parts[4].type, 'document');
      assert.equal(parts[4].object.id, ids.pdf);
    });

    it('sends them to Anthropic as base64 image and document blocks', async () => {
      anthropic.requests.length = 0;
      const run = await srv.client().interactions.execute(an, {
        data: { question: 'read it', photo: `store:${ids.jpeg}`, contract: `store:${ids.pdf}` },
      });
      assert.equal(run.status, 'completed');
      const blocks = (anthropic.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.deepEqual(blocks[0], { type: 'text', text: 'Q: read it' });
      assert.equal(blocks[1].type, 'image');
      assert.equal(blocks[1].source.type, 'base64');
      assert.equal(blocks[1].source.media_type, 'image/jpeg');
      assert.deepEqual(Buffer.from(blocks[1].source.data, 'base64'), jpeg);
      assert.equal(blocks[2].type, 'document');
      assert.equal(blocks[2].source.media_type, 'application/pdf');
      assert.deepEqual(Buffer.from(blocks[2].source.data, 'base64'), pdf);
    });

    it('finds the runs that showed an object with objects:<id>', async () => {
      const shown = await srv.client().interactions.execute(oa, {
        data: { question: 'search me', photo: `store:${ids.jpeg}` },
      });
      const plain = await srv.client().interactions.execute(oa, { data: { question: 'no media' } });
      const found = await srv.api('POST', '/api/v1/runs/search', { query: `objects:${ids.jpeg}`, limit: 100 });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      const hits = (Array.isArray(found.body) ? found.body : found.body.results).map((r: any) => r.id);
      assert.ok(hits.includes(shown.id), 'the run that showed the object');
      assert.ok(!hits.includes(plain.id), 'not a run without it');
      const none = await srv.api('POST', '/api/v1/runs/search', { query: 'objects:nothing-shown' });
      assert.deepEqual(Array.isArray(none.body) ? none.body : none.body.results, []);
    });

    it('keeps a prompt without media inputs exactly as before on the wire', async () => {
      openai.requests.length = 0;
      await srv.client().interactions.execute(oa, { data: { question: 'plain' } });
      assert.deepEqual((openai.requests.at(-1)!.body as any).messages, [{ role: 'user', content: 'Q: plain' }]);
    });

    const refused = async (data: Record<string, unknown>, status: number, pattern: RegExp) => {
      const before = openai.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: oa, data: { question: 'q', ...data } });
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.match(r.body.message, pattern);
      assert.equal(openai.requests.length, before, 'no provider call');
      return r;
    };

    it('refuses another project\u2019s object and a missing one with a 404 naming the parameter', async () => {
      const other = await secondProject(srv);
      const theirs = await object('theirs.png', png, 'image/png', other.key);
      await refused({ photo: `store:${theirs}` }, 404, /object of data\.photo/);
      await refused({ pages: [`store:${ids.png}`, 'store:nope'] }, 404, /object of data\.pages\[1\] "nope"/);
    });

    it('refuses an object that has no content yet with a 409', async () => {
      // Orrery creates no object over an upload that is not finished: an object without content
      // (its file still to come) is the case a run can meet.
      const r = await srv.api('POST', '/api/v1/objects', { name: 'later' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      await refused({ photo: `store:${r.body.id}` }, 409, /data\.photo: object .* has no content yet/);
    });

    it('refuses plain text, http URLs and bad data: URLs with a 400 naming the parameter', async () => {
      await refused({ photo: 'a photo of a cat' }, 400, /data\.photo is an image input and was given plain text/);
      await refused({ photo: 'http://example.com/a.png' }, 400, /data\.photo: http URLs are not accepted/);
      await refused({ photo: 'file:///etc/passwd' }, 400, /data\.photo: file URLs are not accepted/);
      await refused({ photo: 'data:text/html;base64,PGI+' }, 400, /data\.photo is a data: URL of text\/html/);
      await refused({ pages: ['store:'] }, 400, /data\.pages\[0\] is an image input and was given plain text/);
    });

    it('refuses a corrupt image with a 415, and oversized images and a PDF bomb with a 413', async () => {
      const corrupt = await object('broken.png', Buffer.from('not a png at all'), 'image/png');
      await refused({ photo: `store:${corrupt}` }, 415, /data\.photo \(image\/png\) is not a readable/);
      const heic = await object('phone.heic', Buffer.from('....ftypheic....'), 'image/heic');
      await refused({ photo: `store:${heic}` }, 415, /data\.photo is image\/heic/);
      const bomb = await object('bomb.pdf', pdfOf(150), 'application/pdf');
      await refused({ contract: `store:${bomb}` }, 413, /data\.contract is a PDF of 150 pages; the limit is 100/);
      // A PNG whose header claims 10,000 × 10,000 pixels: refused by its header, never decoded.
      const huge = Buffer.from(png);
      huge.writeUInt32BE(10_000, 16);
      huge.writeUInt32BE(10_000, 20);
      await refused({ photo: `data:image/png;base64,${huge.toString('base64')}` }, 413, /10000×10000 pixels/);
    });
  });
}

describe('media bounds are settings', () => {
  it('refuses an image over ORRERY_MEDIA_MAX_BYTES with a 413 naming the setting', async () => {
    const srv = await startTestServer('sqlite', {
      media: { maxBytes: 100, maxPixels: 40_000_000, maxPdfBytes: 1000, maxPdfPages: 100 },
    });
    try {
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'Look',
        environment: (await srv.api('POST', '/api/v1/environments', { name: 't', provider: 'test' })).body.id,
        model: 'echo',
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'hi', content_type: 'text' } }],
      });
      const big = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#123' } })
        .png()
        .toBuffer();
      assert.ok(big.length > 100);
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.body.id,
        data: { photo: `data:image/png;base64,${big.toString('base64')}` },
      });
      assert.equal(r.status, 413, JSON.stringify(r.body));
      assert.match(r.body.message, /data\.photo is \d+ bytes; the limit is 100 \(ORRERY_MEDIA_MAX_BYTES\)/);
    } finally {
      await srv.close();
    }
  });
});
