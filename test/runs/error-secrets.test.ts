/**
 * A provider whose error text echoes the environment's key (raw, base64, URL-encoded): none of it
 * reaches the failed run's answer, the stored run, the SSE stream, the model list or an embeddings answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const KEY = 'sk-proj-Ab/cd+ef=gh0123456789XYZsecret';
const FORMS = [KEY, Buffer.from(KEY).toString('base64'), encodeURIComponent(KEY)];
// As a provider quoting a Basic header: the key's base64 inside a longer base64 text.
const BASIC = Buffer.from(`apikey:${KEY}`).toString('base64');
const ECHO = `Incorrect API key provided: ${FORMS[0]}; as base64 ${FORMS[1]}; in the URL ?key=${FORMS[2]}; header Basic ${BASIC}`;

const leaks = (text: string) =>
  [...FORMS, Buffer.from(KEY).toString('base64').slice(4, 24)].filter((f) => text.includes(f));

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: provider errors never give back the environment's secrets`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let env: string;
    let ix: string;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        apiKey: null,
        fail: { status: 401, message: ECHO, code: 'invalid_api_key' },
        failModels: { status: 401, message: ECHO },
      });
      const created = await srv.api('POST', '/api/v1/environments', {
        name: 'echoing',
        provider: 'openai_compatible',
        endpoint_url: wire.url,
        api_key: KEY,
        default_model: 'm',
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      env = created.body.id;
      ix = (
        await srv.api('POST', '/api/v1/interactions', {
          name: 'ask',
          status: 'draft',
          environment: env,
          prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'hello' } }],
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    it('scrubs the 502 answer and the stored run', async () => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 502, JSON.stringify(r.body));
      const answered = JSON.stringify(r.body);
      assert.match(answered, /Incorrect API key provided: \[REDACTED\]/);
      assert.deepEqual(leaks(answered), []);
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.status, 'failed');
      assert.match(stored.body.error.message, /\[REDACTED\]/);
      assert.deepEqual(leaks(JSON.stringify(stored.body)), []);
    });

    it('scrubs the SSE stream of a streamed run', async () => {
      const created = await srv.api('POST', '/api/v1/runs', { interaction: ix, stream: true });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const text = await (
        await fetch(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
      ).text();
      const close = JSON.parse(/event: close\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(close.status, 'failed');
      assert.match(close.error.message, /\[REDACTED\]/);
      assert.deepEqual(leaks(text), []);
    });

    it('scrubs the model list failure', async () => {
      const r = await srv.api('GET', `/api/v1/environments/${env}/models`);
      assert.equal(r.status, 502, JSON.stringify(r.body));
      assert.match(r.body.message, /\[REDACTED\]/);
      assert.deepEqual(leaks(JSON.stringify(r.body)), []);
    });

    it('scrubs an embeddings failure', async () => {
      const r = await srv.api('POST', `/api/v1/environments/${env}/embeddings`, {
        inputs: [{ type: 'text', text: 'hi' }],
        model: 'text-embedding-3-small',
      });
      assert.equal(r.status, 502, JSON.stringify(r.body));
      assert.match(r.body.message, /\[REDACTED\]/);
      assert.deepEqual(leaks(JSON.stringify(r.body)), []);
    });
  });
}
