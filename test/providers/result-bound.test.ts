/**
 * A model's answer is bounded (ORRERY_MAX_RESULT_SIZE): a provider answering 10 MB of text, or a
 * stream that never ends, fails the run with `provider_result_too_large` and the call is cut
 * there; answers under the bound are untouched. Against a local OpenAI wire server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const LIMIT = 64 * 1024;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the bound on a model's result`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let interaction: string;

    before(async () => {
      wire = await startOpenAIWireServer({ apiKey: null });
      srv = await startTestServer(dialect, { maxResultBytes: LIMIT });
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'wire',
        provider: 'openai_compatible',
        endpoint_url: wire.url,
        default_model: 'm',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'Ask',
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'hi' } }],
      });
      interaction = ix.body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const tooLarge = async (r: { status: number; body: any }) => {
      assert.equal(r.status, 502, JSON.stringify(r.body).slice(0, 500));
      assert.equal(r.body.error, 'provider_result_too_large');
      assert.match(r.body.message, new RegExp(`more than ${LIMIT} bytes`));
      assert.match(r.body.message, /ORRERY_MAX_RESULT_SIZE/);
      const runId = r.body.details?.run_id ?? /run (\S+) failed/.exec(r.body.message)?.[1];
      const stored = await srv.api('GET', `/api/v1/runs/${runId}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'provider_result_too_large');
      assert.ok(JSON.stringify(stored.body.result ?? []).length < LIMIT);
    };

    it('a blocking answer of 10 MB (cut on the wire) or just over the bound fails the run', async () => {
      wire.options.text = 'x'.repeat(10_000_000);
      await tooLarge(await srv.api('POST', '/api/v1/runs', { interaction }));
      // Past the bound, under what the wire allows: the driver's text is counted.
      wire.options.text = 'é'.repeat(LIMIT / 2 + 10);
      await tooLarge(await srv.api('POST', '/api/v1/runs', { interaction }));
    });

    it('an answer under the bound is kept whole', async () => {
      wire.options.text = 'é'.repeat(LIMIT / 2 - 10);
      const r = await srv.api('POST', '/api/v1/runs', { interaction });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
      assert.equal(r.body.result[0].value, wire.options.text);
    });

    it('a stream that never ends is cut at the bound: the run fails and its stream closes', async () => {
      wire.options.endless = 'more and more text ';
      try {
        const r = await srv.api('POST', '/api/v1/runs', { interaction, stream: true });
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
        const text = await (
          await fetch(`${srv.url}/api/v1/runs/${r.body.id}/stream?access_token=${srv.adminKey}`)
        ).text();
        const close = JSON.parse(/event: close\ndata: (.*)\n/.exec(text)![1]);
        assert.equal(close.status, 'failed');
        assert.equal(close.error.code, 'provider_result_too_large');
        const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
        assert.equal(stored.body.status, 'failed');
        assert.equal(stored.body.error.code, 'provider_result_too_large');
        const kept = (stored.body.result ?? []).map((p: { value: string }) => p.value).join('');
        assert.ok(Buffer.byteLength(kept) <= LIMIT, `${Buffer.byteLength(kept)} bytes kept`);
        // The provider's connection was closed, not left streaming.
        for (let i = 0; i < 200 && wire.endlessClosed === 0; i++) await new Promise((res) => setTimeout(res, 10));
        assert.equal(wire.endlessClosed, 1);
      } finally {
        delete wire.options.endless;
      }
    });
  });
}
