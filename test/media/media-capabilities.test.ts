/**
 * Which models take images and PDFs decides what a run sends: the vendored table, the
 * environment's `config.capabilities` override, and the fallbacks where a model cannot take a
 * kind (a PDF's extracted text, or its first page's rendition), recorded on the stored part; an
 * image to a model without vision is a 400 before any provider call. Through HTTP and the
 * official client on both databases, against loopback wire servers whose request bodies are read.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { processed, upload } from '../objects/helpers.ts';
import { makePdf } from '../content/helpers.ts';
import { knownMediaSupport } from '../../src/media/capabilities.ts';

const SCHEMA = {
  type: 'object',
  properties: { photo: { type: 'string', editor: 'media' }, contract: { type: 'string', editor: 'document' } },
};

describe('the vendored table of models that take images and PDFs', () => {
  const cases: [provider: string, model: string, images: boolean, documents: boolean][] = [
    ['openai', 'gpt-4o-mini', true, true],
    ['openai', 'gpt-4.1-nano', true, true],
    ['openai', 'gpt-3.5-turbo', false, false],
    ['openai', 'o3-mini', false, false],
    ['openai', 'gpt-4o-audio-preview', false, false],
    ['openai', 'some-future-model', false, false],
    // An OpenAI-shaped server: an OpenAI name is that model; any other takes images, not PDFs.
    ['openai_compatible', 'gpt-4o', true, true],
    ['openai_compatible', 'gpt-3.5-turbo', false, false],
    ['openai_compatible', 'llava-v1.6-mistral-7b', true, false],
    ['openai_compatible', 'Qwen/Qwen2.5-VL-7B-Instruct', true, false],
    ['anthropic', 'claude-sonnet-4-5', true, true],
    ['anthropic', 'claude-3-haiku-20240307', true, false],
    ['anthropic', 'claude-2.1', false, false],
    ['bedrock', 'us.anthropic.claude-sonnet-4-20250514-v1:0', true, true],
    ['bedrock', 'amazon.nova-micro-v1:0', false, true],
    ['bedrock', 'arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama4-scout-17b-instruct-v1:0', true, true],
    ['vertexai', 'gemini-2.5-flash', true, true],
    ['vertexai', 'publishers/google/models/gemini-2.0-flash', true, true],
    ['replicate', 'meta/llama', false, false],
  ];
  for (const [provider, model, images, documents] of cases) {
    it(`${provider} ${model}: images ${images}, PDFs ${documents}`, () => {
      assert.equal(knownMediaSupport(provider, model, 'images'), images);
      assert.equal(knownMediaSupport(provider, model, 'documents'), documents);
    });
  }
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: a model's media capabilities decide what a run sends`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    let png: Buffer;
    let ids: { png: string; text: string; scan: string };

    const object = async (name: string, bytes: Buffer, type: string) => {
      const up = await upload(srv, name, bytes, { type });
      const r = await srv.api('POST', '/api/v1/objects', { name, content: { source: up.id, type, name } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const interaction = async (env: Record<string, unknown>, model: string) => {
      const e = await srv.api('POST', '/api/v1/environments', {
        name: `media ${Math.random().toString(36).slice(2, 8)}`,
        api_key: 'sk-test',
        ...env,
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `Caps ${model} ${Math.random().toString(36).slice(2, 7)}`,
        environment: e.body.id,
        ...(model ? { model } : {}),
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'Read it', content_type: 'text' } }],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id as string;
    };
    const onOpenAI = (model: string, config?: Record<string, unknown>) =>
      interaction({ provider: 'openai_compatible', endpoint_url: openai.url, ...(config ? { config } : {}) }, model);
    const lastUserContent = () => (openai.requests.at(-1)!.body as any).messages.at(-1).content;
    const storedPart = async (runId: string, i: number) =>
      (await srv.api('GET', `/api/v1/runs/${runId}`)).body.prompt.at(-1).content[i];
    const refused = async (ix: string, data: Record<string, unknown>, status: number, pattern: RegExp) => {
      const calls = openai.requests.length + anthropic.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, data });
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.match(r.body.message, pattern);
      assert.equal(openai.requests.length + anthropic.requests.length, calls, 'no provider call');
      return r;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      anthropic = await startAnthropicWireServer({ apiKey: null });
      png = await sharp({ create: { width: 6, height: 6, channels: 3, background: '#a50' } })
        .png()
        .toBuffer();
      ids = {
        png: await object('dot.png', png, 'image/png'),
        text: await object('lease.pdf', await makePdf(1, () => ['The rent is 900 euros a month.']), 'application/pdf'),
        // A scan: a page without a text layer.
        scan: await object('scan.pdf', await makePdf(1, () => []), 'application/pdf'),
      };
      for (const id of Object.values(ids)) assert.equal((await processed(srv, id)).status, 'ready');
    });
    after(async () => {
      await srv.close();
      await openai.close();
      await anthropic.close();
    });

    it('refuses an image to a model without vision with a 400 media_unsupported naming the parameter', async () => {
      const ix = await onOpenAI('gpt-3.5-turbo');
      const r = await refused(
        ix,
        { photo: `store:${ids.png}` },
        400,
        /data\.photo is an image, and model "gpt-3\.5-turbo"/,
      );
      assert.equal(r.body.error, 'media_unsupported');
      await refused(ix, { photo: `data:image/png;base64,${png.toString('base64')}` }, 400, /takes no images/);
      await refused(ix, { photo: 'https://example.com/a.png' }, 400, /data\.photo is an image/);
    });

    it('sends an unknown OpenAI-shaped model images, and a PDF as its extracted text, recorded on the run', async () => {
      const ix = await onOpenAI('llava-v1.6-mistral-7b');
      openai.requests.length = 0;
      const run = await srv.client().interactions.execute(ix, {
        data: { photo: `store:${ids.png}`, contract: `store:${ids.text}` },
      });
      assert.equal(run.status, 'completed');
      const content = lastUserContent();
      assert.deepEqual(
        content.map((c: any) => c.type),
        ['text', 'image_url', 'text'],
      );
      assert.deepEqual(Buffer.from(content[1].image_url.url.split(',')[1], 'base64'), png);
      assert.match(content[2].text, /^Document lease\.pdf:\n\n/);
      assert.match(content[2].text, /The rent is 900 euros a month\./);
      const part = await storedPart(run.id, 2);
      assert.equal(part.type, 'document');
      assert.equal(part.url, `store:${ids.text}`);
      assert.equal(part.object.fallback, 'text');
      assert.equal((await storedPart(run.id, 1)).object.fallback, undefined, 'the image went as it is');
    });

    it('sends a scanned PDF as its rendition where the model takes images', async () => {
      const ix = await onOpenAI('llava-v1.6-mistral-7b');
      openai.requests.length = 0;
      const run = await srv.client().interactions.execute(ix, { data: { contract: `store:${ids.scan}` } });
      assert.equal(run.status, 'completed');
      const content = lastUserContent();
      assert.equal(content[1].type, 'image_url');
      const prefix = 'data:image/jpeg;base64,';
      assert.ok(content[1].image_url.url.startsWith(prefix));
      const sent = Buffer.from(content[1].image_url.url.slice(prefix.length), 'base64');
      // The bytes are those of the object's largest rendition, as stored.
      const renditions = (await srv.client().objects.listRenditions(ids.scan)) as any[];
      const largest = renditions.sort((a, b) => b.properties.max_hw - a.properties.max_hw)[0];
      const dl = await srv.api('POST', '/api/v1/objects/download-url', { file: largest.content.source });
      assert.deepEqual(sent, Buffer.from(await (await fetch(dl.body.url)).arrayBuffer()));
      assert.equal((await sharp(sent).metadata()).format, 'jpeg');
      assert.equal((await storedPart(run.id, 1)).object.fallback, 'rendition');
    });

    it('refuses a PDF with no fallback that applies with a 400 before any provider call', async () => {
      // A text-only model: the scan has no text, and its rendition is an image it cannot take.
      await refused(
        await onOpenAI('gpt-3.5-turbo'),
        { contract: `store:${ids.scan}` },
        400,
        /data\.contract is a PDF document, .* takes no PDFs; the object has no extracted text to send/,
      );
      // A data: URL has no object behind it: no text, no rendition.
      const pdf = await makePdf(1);
      await refused(
        await onOpenAI('llava-v1.6-mistral-7b'),
        { contract: `data:application/pdf;base64,${pdf.toString('base64')}` },
        400,
        /data\.contract is a PDF document, and model "llava-v1\.6-mistral-7b" .* takes no documents/,
      );
    });

    it('sends a Claude 3 model a PDF as its text on the Anthropic wire', async () => {
      anthropic.requests.length = 0;
      const ix = await interaction({ provider: 'anthropic', endpoint_url: anthropic.url }, 'claude-3-haiku-20240307');
      const run = await srv.client().interactions.execute(ix, { data: { contract: `store:${ids.text}` } });
      assert.equal(run.status, 'completed');
      const blocks = (anthropic.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.deepEqual(
        blocks.map((b: any) => b.type),
        ['text', 'text'],
      );
      assert.match(blocks[1].text, /The rent is 900 euros a month\./);
    });

    it('passes media through a virtual environment to the entry that runs it', async () => {
      const real = await srv.api('POST', '/api/v1/environments', {
        name: `real ${dialect}`,
        provider: 'openai_compatible',
        endpoint_url: openai.url,
        api_key: 'sk-test',
      });
      const ix = await interaction(
        { provider: 'virtual_lb', config: { entries: [{ model: `${real.body.id}::gpt-4o-mini`, weight: 1 }] } },
        '',
      );
      openai.requests.length = 0;
      const run = await srv.client().interactions.execute(ix, { data: { photo: `store:${ids.png}` } });
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const content = lastUserContent();
      assert.equal(content[1].type, 'image_url');
      assert.deepEqual(Buffer.from(content[1].image_url.url.split(',')[1], 'base64'), png);
    });

    it('lets config.capabilities override the table, for all models or by model id', async () => {
      // documents for one model: the PDF goes as a file part, not as text.
      openai.requests.length = 0;
      const yes = await onOpenAI('llava-v1.6-mistral-7b', {
        capabilities: { documents: { 'llava-v1.6-mistral-7b': true } },
      });
      const run = await srv.client().interactions.execute(yes, { data: { contract: `store:${ids.text}` } });
      assert.equal(run.status, 'completed');
      assert.equal(lastUserContent()[1].type, 'file');
      assert.equal((await storedPart(run.id, 1)).object.fallback, undefined);

      // images: false for every model of the environment, even one the table says sees.
      await refused(
        await onOpenAI('gpt-4o', { capabilities: { images: false } }),
        { photo: `store:${ids.png}` },
        400,
        /the environment says so in config\.capabilities\.images/,
      );
      // A text-only model vouched for: the image is sent.
      openai.requests.length = 0;
      const vouched = await onOpenAI('gpt-3.5-turbo', { capabilities: { images: true } });
      await srv.client().interactions.execute(vouched, { data: { photo: `store:${ids.png}` } });
      assert.equal(lastUserContent()[1].type, 'image_url');

      // A value that is not true, false or a map of model ids: a 400 naming the setting.
      await refused(
        await onOpenAI('gpt-4o', { capabilities: { images: 'yes' } }),
        { photo: `store:${ids.png}` },
        400,
        /config\.capabilities\.images must be true, false or an object of model ids/,
      );
    });
  });
}
