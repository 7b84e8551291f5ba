/**
 * `strip_options.images_after_turns` on a conversation with an image and a PDF: their parts stay
 * in the history for N turns after their own, then each becomes the placeholder Vertesia defines
 * ("[Image removed from conversation history]", "[Document removed from conversation history]").
 * Through the official client's runs.sendUserMessage on both databases, the history checked in
 * the request bodies an OpenAI wire server received.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { upload } from '../objects/helpers.ts';

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count 1 >> endobj\n' +
    '3 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
  'latin1',
);
const SCHEMA = {
  type: 'object',
  properties: { photo: { type: 'string', editor: 'media' }, contract: { type: 'string', editor: 'document' } },
};
const IMAGE_GONE = { type: 'text', text: '[Image removed from conversation history]' };
const DOCUMENT_GONE = { type: 'text', text: '[Document removed from conversation history]' };

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: strip_options.images_after_turns on media parts`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let env: string;
    let ix: string;
    let png: Buffer;
    let data: { photo: string; contract: string };
    const ref = (run: any) => ({ id: run.id, account: run.account, project: run.project });

    const object = async (name: string, bytes: Buffer, type: string) => {
      const up = await upload(srv, name, bytes, { type });
      const r = await srv.api('POST', '/api/v1/objects', { name, content: { source: up.id, type, name } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      const e = await srv.api('POST', '/api/v1/environments', {
        name: 'openai wire',
        provider: 'openai_compatible',
        endpoint_url: openai.url,
        api_key: 'k',
      });
      env = e.body.id;
      const i = await srv.api('POST', '/api/v1/interactions', {
        name: 'Look at them',
        environment: env,
        model: 'gpt-4o',
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'Look', content_type: 'text' } }],
      });
      assert.equal(i.status, 200, JSON.stringify(i.body));
      ix = i.body.id;
      png = await sharp({ create: { width: 6, height: 4, channels: 3, background: '#a50' } })
        .png()
        .toBuffer();
      data = {
        photo: `store:${await object('leaf.png', png, 'image/png')}`,
        contract: `store:${await object('lease.pdf', PDF, 'application/pdf')}`,
      };
    });
    after(async () => {
      await srv.close();
      await openai.close();
    });

    /** A conversation started on the media, then `messages.length` user turns; the first user message of each request. */
    const converse = async (messages: string[], strip?: Record<string, number>) => {
      openai.requests.length = 0;
      const client = srv.client();
      let run: any = await client.interactions.execute(ix, { data, conversation: true } as any);
      for (const message of messages)
        run = await client.runs.sendUserMessage({
          run: ref(run),
          environment: env,
          options: { model: 'gpt-4o' },
          tools: [],
          message,
          ...(strip ? { strip_options: strip } : {}),
        } as any);
      assert.equal(openai.requests.length, messages.length + 1);
      return openai.requests.map((r) => (r.body as any).messages[0].content as any[]);
    };
    const kinds = (content: any[]) => content.map((c) => (c.type === 'text' ? c.text : c.type));

    it('keeps the image and PDF parts for N turns after their own, then sends the placeholders', async () => {
      const firsts = await converse(['Second?', 'Third?', 'Fourth?'], { images_after_turns: 2 });
      // Turns 1 to 3: the parts are sent (turn 1 is their own; 2 and 3 are within 2 turns of it).
      for (const content of firsts.slice(0, 3)) {
        assert.deepEqual(kinds(content), ['Look', 'image_url', 'file']);
        assert.deepEqual(Buffer.from(content[1].image_url.url.split(',')[1], 'base64'), png);
        assert.deepEqual(Buffer.from(content[2].file.file_data.split(',')[1], 'base64'), PDF);
      }
      // Turn 4: three turns after theirs, both are the placeholders Vertesia defines.
      assert.deepEqual(firsts[3], [{ type: 'text', text: 'Look' }, IMAGE_GONE, DOCUMENT_GONE]);
    });

    it('0 strips them from the history right after their own turn', async () => {
      const firsts = await converse(['Second?'], { images_after_turns: 0 });
      assert.deepEqual(kinds(firsts[0]), ['Look', 'image_url', 'file']);
      assert.deepEqual(firsts[1], [{ type: 'text', text: 'Look' }, IMAGE_GONE, DOCUMENT_GONE]);
    });

    it('without strip_options the media stay in the history', async () => {
      const firsts = await converse(['Second?', 'Third?']);
      for (const content of firsts) assert.deepEqual(kinds(content), ['Look', 'image_url', 'file']);
    });

    it('refuses a strip option that is not a number from 0 with a 400 naming it', async () => {
      const first: any = await srv.client().interactions.execute(ix, { data, conversation: true } as any);
      const before = openai.requests.length;
      const r = await srv.api('POST', '/api/v1/runs/user-message', {
        run: first.id,
        environment: env,
        message: 'next',
        strip_options: { images_after_turns: -1 },
      });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(r.body.message, /images_after_turns/);
      assert.equal(openai.requests.length, before);
    });
  });
}
