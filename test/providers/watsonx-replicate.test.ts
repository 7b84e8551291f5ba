/**
 * IBM watsonx.ai and Replicate, each against a local server on loopback that speaks its documented
 * wire (IBM Cloud IAM and the watsonx.ai runtime; Replicate predictions, sync and async, and their
 * SSE stream URLs): blocking through HTTP and the official client, streamed through the official
 * client, model options as sent, errors with the provider's own words, a 429 with retry-after,
 * and model lists.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { startWatsonxWireServer, type WatsonxWireServer } from '../support/watsonx-wire-server.ts';
import {
  REPLICATE_VERSION,
  startReplicateWireServer,
  type ReplicateWireServer,
} from '../support/replicate-wire-server.ts';

const SCHEMA = { type: 'object', properties: { greeting: { type: 'string' } }, required: ['greeting'] };

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: IBM watsonx.ai and Replicate`, () => {
    let srv: TestServer;
    let wx: WatsonxWireServer;
    let rep: ReplicateWireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wx = await startWatsonxWireServer({
        apiKey: 'ibm-key-1',
        text: 'Bonjour from watsonx',
        usage: { prompt_tokens: 12, completion_tokens: 4 },
      });
      rep = await startReplicateWireServer({
        token: 'r8_good',
        text: 'Bonjour from Replicate',
        metrics: { input_token_count: 9, output_token_count: 5 },
      });
    });
    after(async () => {
      await srv.close();
      await wx.close();
      await rep.close();
    });

    const setup = async (provider: string, env: Record<string, unknown>, ix: Record<string, unknown> = {}) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `${provider} ${++n}`, provider, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const created = await srv.api('POST', '/api/v1/interactions', {
        name: `ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts: [
          { type: 'template', template: { role: 'system', content_type: 'text', content: 'You are terse.' } },
          { type: 'template', template: { role: 'user', content_type: 'text', content: 'Say hello in French' } },
        ],
        ...ix,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      return { env: e.body.id as string, ix: created.body.id as string };
    };
    const watsonxEnv = (extra: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
      endpoint_url: wx.origin,
      apiKey: 'ibm-key-1',
      default_model: 'ibm/granite-3-8b-instruct',
      config: { iam_url: wx.iamUrl, project_id: 'proj-1', ...config },
      ...extra,
    });
    const replicateEnv = (extra: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
      endpoint_url: rep.origin,
      apiKey: 'r8_good',
      default_model: 'meta/meta-llama-3-8b-instruct',
      config,
      ...extra,
    });
    /** A streamed run over HTTP: its chunks and the final run from the close event. */
    const streamOverHttp = async (ix: string) => {
      const created = await srv.api('POST', '/api/v1/runs', { interaction: ix, stream: true });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const text = await (
        await fetch(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
      ).text();
      const chunks = [...text.matchAll(/^data: (".*")$/gm)].map((m) => JSON.parse(m[1]) as string);
      return { chunks, final: JSON.parse(/event: close\ndata: (.*)\n/.exec(text)![1]) };
    };
    const streamThroughClient = async (ix: string) => {
      const chunks: string[] = [];
      const started = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
      const final = await srv.client().runs.retrieve(started.id);
      return { chunks, final };
    };

    describe('watsonx', () => {
      it('blocking chat through HTTP and the client: IAM token exchanged once and reused, model options as sent', async () => {
        const { ix } = await setup('watsonx', watsonxEnv());
        const issued = wx.tokensIssued();
        const from = wx.requests.length;
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: ix,
          config: {
            model_options: {
              temperature: 0.3,
              max_tokens: 50,
              top_p: 0.8,
              top_k: 20,
              stop: ['END'],
              presence_penalty: 0.5,
              frequency_penalty: -0.5,
              seed: 42,
            },
          },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed');
        assert.equal(r.body.result[0].value, 'Bonjour from watsonx');
        assert.deepEqual(r.body.token_use, { prompt: 12, result: 4, total: 16 });
        assert.equal(r.body.finish_reason, 'stop');

        const iam = wx.requests.slice(from).filter((q) => q.path === '/identity/token');
        assert.equal(iam.length, 1);
        assert.match(String(iam[0].headers['content-type']), /^application\/x-www-form-urlencoded/);
        assert.deepEqual(iam[0].body, { grant_type: 'urn:ibm:params:oauth:grant-type:apikey', apikey: 'ibm-key-1' });
        const sent = wx.requests.at(-1)!;
        assert.equal(sent.method, 'POST');
        assert.equal(sent.path, '/ml/v1/text/chat');
        assert.deepEqual(sent.query, { version: '2024-05-31' });
        assert.equal(sent.headers.authorization, `Bearer iam-token-${issued + 1}`);
        assert.deepEqual(
          sent.body,
          {
            model_id: 'ibm/granite-3-8b-instruct',
            project_id: 'proj-1',
            messages: [
              { role: 'system', content: 'You are terse.' },
              { role: 'user', content: 'Say hello in French' },
            ],
            max_tokens: 50,
            temperature: 0.3,
            top_p: 0.8,
            presence_penalty: 0.5,
            frequency_penalty: -0.5,
            seed: 42,
            stop: ['END'],
          },
          'the chat API has no top_k: it is left out',
        );

        const run = await srv.client().interactions.execute(ix, {} as any);
        assert.equal(run.result.text(), 'Bonjour from watsonx');
        assert.deepEqual(run.token_use, { prompt: 12, result: 4, total: 16 });
        const again = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(again.status, 200, JSON.stringify(again.body));
        assert.equal(wx.tokensIssued(), issued + 1, 'one IAM exchange serves every run');
        assert.equal(wx.requests.at(-1)!.headers.authorization, `Bearer iam-token-${issued + 1}`);
      });

      it('streams the chat through the client: pieces, finish reason and usage', async () => {
        wx.options.chunks = ['Bon', 'jour ', 'from ', 'watsonx'];
        try {
          const { ix } = await setup('watsonx', watsonxEnv());
          const { chunks, final } = await streamThroughClient(ix);
          assert.ok(chunks.length > 1, JSON.stringify(chunks));
          assert.equal(chunks.join(''), 'Bonjour from watsonx');
          assert.equal(wx.requests.at(-1)!.path, '/ml/v1/text/chat_stream');
          assert.equal(final.status, 'completed');
          assert.equal((final as any).result[0].value, 'Bonjour from watsonx');
          assert.deepEqual(final.token_use, { prompt: 12, result: 4, total: 16 });
          assert.equal((final as any).finish_reason, 'stop');
        } finally {
          wx.options.chunks = undefined;
        }
      });

      it('config.api "generation": the text generation API with llumiverse\'s prompt, parameters mapped, stop reasons translated', async () => {
        wx.options.finishReason = 'length';
        try {
          const { ix } = await setup(
            'watsonx',
            watsonxEnv({}, { api: 'generation', space_id: 'space-9', project_id: undefined, version: '2025-02-11' }),
          );
          const r = await srv.api('POST', '/api/v1/runs', {
            interaction: ix,
            config: {
              model_options: { temperature: 0.6, max_tokens: 30, top_k: 5, top_p: 0.9, stop: ['\n\n'], seed: 7 },
            },
          });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.result[0].value, 'Bonjour from watsonx');
          assert.equal(r.body.finish_reason, 'length');
          assert.deepEqual(r.body.token_use, { prompt: 12, result: 4, total: 16 });
          const sent = wx.requests.at(-1)!;
          assert.equal(sent.path, '/ml/v1/text/generation');
          assert.equal(sent.query.version, '2025-02-11');
          assert.deepEqual(sent.body, {
            model_id: 'ibm/granite-3-8b-instruct',
            space_id: 'space-9',
            input: 'CONTEXT: You are terse.\nINSTRUCTION: Say hello in French\n',
            parameters: {
              decoding_method: 'sample',
              max_new_tokens: 30,
              temperature: 0.6,
              top_p: 0.9,
              top_k: 5,
              random_seed: 7,
              stop_sequences: ['\n\n'],
            },
          });
          const { chunks, final } = await streamThroughClient(ix);
          assert.ok(chunks.length > 1, JSON.stringify(chunks));
          assert.equal(chunks.join(''), 'Bonjour from watsonx');
          assert.equal(wx.requests.at(-1)!.path, '/ml/v1/text/generation_stream');
          assert.equal(final.status, 'completed');
          assert.equal((final as any).finish_reason, 'length');
          assert.deepEqual(final.token_use, { prompt: 12, result: 4, total: 16 });
        } finally {
          wx.options.finishReason = undefined;
        }
      });

      it('result_schema: JSON mode and the schema as a system instruction', async () => {
        wx.options.text = '{"greeting":"Bonjour"}';
        try {
          const { ix } = await setup('watsonx', watsonxEnv(), { result_schema: SCHEMA });
          const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.deepEqual(r.body.result[0].value, { greeting: 'Bonjour' });
          const sent = wx.requests.at(-1)!.body;
          assert.deepEqual(sent.response_format, { type: 'json_object' });
          assert.equal(sent.messages.length, 2);
          assert.equal(sent.messages[0].role, 'system');
          assert.match(
            sent.messages[0].content,
            /^You are terse\.\n\nAnswer only with a JSON value that conforms to the following JSON Schema/,
          );
          // PostgreSQL's jsonb stores the schema's keys in its own order: compare the schema, not its text.
          const stated = /JSON Schema[^\n]*\n(.*)$/s.exec(sent.messages[0].content)?.[1];
          assert.deepEqual(JSON.parse(stated ?? 'null'), SCHEMA);
        } finally {
          wx.options.text = 'Bonjour from watsonx';
        }
      });

      it("a refused API key is provider_auth with IBM's message; missing project or endpoint are clear errors", async () => {
        const bad = await setup('watsonx', watsonxEnv({ apiKey: 'wrong-key' }, { retries: 0 }));
        const auth = await srv.api('POST', '/api/v1/runs', { interaction: bad.ix });
        assert.equal(auth.status, 502);
        assert.equal(auth.body.error, 'provider_auth');
        assert.match(auth.body.message, /IBM Cloud IAM answered HTTP 400: Provided API key could not be found\./);

        const noProject = await setup('watsonx', watsonxEnv({}, { project_id: undefined }));
        const before = wx.requests.length;
        const missing = await srv.api('POST', '/api/v1/runs', { interaction: noProject.ix });
        assert.equal(missing.body.error, 'provider_bad_request');
        assert.match(
          missing.body.message,
          /watsonx\.ai needs a project or deployment space: set config\.project_id \(or config\.space_id\)/,
        );
        assert.equal(wx.requests.slice(before).filter((q) => q.path.startsWith('/ml/')).length, 0, 'nothing was sent');

        const noEndpoint = await setup('watsonx', watsonxEnv({ endpoint_url: undefined }));
        const none = await srv.api('POST', '/api/v1/runs', { interaction: noEndpoint.ix });
        assert.equal(none.body.error, 'provider_bad_request');
        assert.match(none.body.message, /needs the regional endpoint URL/);
      });

      it('a revoked token is exchanged again once; IBM error bodies give their message', async () => {
        const { ix } = await setup('watsonx', watsonxEnv({}, { retries: 0 }));
        assert.equal((await srv.api('POST', '/api/v1/runs', { interaction: ix })).status, 200);
        const issued = wx.tokensIssued();
        wx.revokeTokens();
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(wx.tokensIssued(), issued + 1);
        assert.equal(wx.requests.at(-1)!.headers.authorization, `Bearer iam-token-${issued + 1}`);

        const unknown = await srv.api('POST', '/api/v1/runs', { interaction: ix, config: { model: 'ibm/nope' } });
        assert.equal(unknown.body.error, 'provider_bad_request');
        assert.match(
          unknown.body.message,
          /answered HTTP 404: Model 'ibm\/nope' is not supported for this environment\./,
        );
      });

      it('retries a 429 after its retry-after; an error event mid-stream fails the run', async () => {
        const { ix } = await setup('watsonx', watsonxEnv());
        wx.options.fail = {
          status: 429,
          code: 'token_quota_reached',
          message: 'Rate limit exceeded for this project',
          headers: { 'retry-after': '1' },
          times: 1,
        };
        const started = Date.now();
        const limited = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        wx.options.fail = undefined;
        assert.equal(limited.status, 200, JSON.stringify(limited.body));
        assert.ok(Date.now() - started >= 950, 'the retry waited for retry-after');
        assert.equal(limited.body.attempts[0].error.code, 'provider_rate_limited');
        assert.match(limited.body.attempts[0].error.message, /HTTP 429: Rate limit exceeded for this project/);
        assert.equal(limited.body.result[0].value, 'Bonjour from watsonx');

        wx.options.midStreamError = {
          afterChunks: 1,
          status: 500,
          code: 'internal_error',
          message: 'Model backend crashed',
        };
        try {
          const broken = await streamOverHttp(ix);
          assert.deepEqual(broken.chunks, ['Bonjour ']);
          assert.equal(broken.final.status, 'failed');
          assert.equal(broken.final.error.code, 'provider_error');
          assert.match(broken.final.error.message, /failed mid-stream: Model backend crashed/);
        } finally {
          wx.options.midStreamError = undefined;
        }
      });

      it('lists the chat models of the region', async () => {
        const { env } = await setup('watsonx', watsonxEnv());
        const r = await srv.api('GET', `/api/v1/environments/${env}/models`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(
          r.body.map((m: { id: string }) => m.id),
          ['ibm/granite-3-8b-instruct', 'meta-llama/llama-3-3-70b-instruct'],
        );
        assert.equal(r.body[0].name, 'granite-3-8b-instruct');
        assert.match(r.body[0].description, /Granite/);
        const sent = wx.requests.at(-1)!;
        assert.equal(sent.method, 'GET');
        assert.equal(sent.path, '/ml/v1/foundation_model_specs');
        assert.equal(sent.query.filters, 'function_text_chat');
        assert.equal(sent.query.version, '2024-05-31');
      });
    });

    describe('replicate', () => {
      it("blocking in sync mode through HTTP and the client: the model's predictions URL, Prefer: wait, input as sent", async () => {
        const { ix } = await setup('replicate', replicateEnv());
        const from = rep.requests.length;
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: ix,
          config: {
            model_options: {
              temperature: 0.4,
              max_tokens: 64,
              top_p: 0.95,
              top_k: 40,
              stop: ['END', '###'],
              presence_penalty: 0.2,
              frequency_penalty: 0.1,
              seed: 3,
            },
          },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed');
        assert.equal(r.body.result[0].value, 'Bonjour from Replicate');
        assert.deepEqual(r.body.token_use, { prompt: 9, result: 5, total: 14 });
        const sent = rep.requests.slice(from);
        assert.equal(sent.length, 1, 'sync mode: one request');
        assert.equal(sent[0].path, '/v1/models/meta/meta-llama-3-8b-instruct/predictions');
        assert.equal(sent[0].headers.prefer, 'wait');
        assert.equal(sent[0].headers.authorization, 'Bearer r8_good');
        assert.deepEqual(sent[0].body, {
          input: {
            prompt: 'Say hello in French',
            system_prompt: 'You are terse.',
            max_new_tokens: 64,
            max_tokens: 64,
            temperature: 0.4,
            top_p: 0.95,
            top_k: 40,
            presence_penalty: 0.2,
            frequency_penalty: 0.1,
            seed: 3,
            stop_sequences: 'END,###',
          },
        });
        const run = await srv.client().interactions.execute(ix, {} as any);
        assert.equal(run.result.text(), 'Bonjour from Replicate');
        assert.deepEqual(run.token_use, { prompt: 9, result: 5, total: 14 });
      });

      it('polls a prediction that is still running, and runs a pinned version (owner/name:version)', async () => {
        rep.options.pollsBeforeDone = 2;
        try {
          const { ix } = await setup(
            'replicate',
            replicateEnv({ default_model: `meta/meta-llama-3-8b-instruct:${REPLICATE_VERSION}` }),
          );
          const from = rep.requests.length;
          const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.result[0].value, 'Bonjour from Replicate');
          assert.deepEqual(r.body.token_use, { prompt: 9, result: 5, total: 14 });
          const sent = rep.requests.slice(from);
          assert.equal(sent[0].method, 'POST');
          assert.equal(sent[0].path, '/v1/predictions');
          assert.equal(sent[0].body.version, REPLICATE_VERSION);
          assert.equal(sent[0].body.input.prompt, 'Say hello in French');
          const polls = sent.slice(1);
          assert.equal(polls.length, 3, 'processing, processing, succeeded');
          for (const p of polls) {
            assert.equal(p.method, 'GET');
            assert.match(p.path, /^\/v1\/predictions\/wire\d+pred$/);
            assert.equal(p.headers.authorization, 'Bearer r8_good');
          }
        } finally {
          rep.options.pollsBeforeDone = undefined;
        }
      });

      it('streams through the client: output pieces verbatim (newlines kept), then the token counts', async () => {
        rep.options.chunks = ['Bonjour', ' from\n', '\nRep', 'licate'];
        try {
          const { ix } = await setup('replicate', replicateEnv());
          const from = rep.requests.length;
          const { chunks, final } = await streamThroughClient(ix);
          assert.ok(chunks.length > 1, JSON.stringify(chunks));
          assert.equal(chunks.join(''), 'Bonjour from\n\nReplicate');
          assert.equal(final.status, 'completed');
          assert.equal((final as any).result[0].value, 'Bonjour from\n\nReplicate');
          assert.deepEqual(final.token_use, { prompt: 9, result: 5, total: 14 });
          const sent = rep.requests.slice(from);
          assert.equal(sent[0].body.stream, true);
          assert.equal(sent[0].headers.prefer, undefined, 'a streamed prediction is not created in sync mode');
          assert.match(sent[1].path, /^\/stream\//);
          assert.equal(sent[1].headers.accept, 'text/event-stream');
          assert.equal(sent[2].method, 'GET');
          assert.match(sent[2].path, /^\/v1\/predictions\//);
        } finally {
          rep.options.chunks = undefined;
        }
      });

      it('an error event fails the streamed run, a canceled done too, and a failed prediction fails a blocking one', async () => {
        const { ix } = await setup('replicate', replicateEnv({}, { retries: 0 }));
        rep.options.streamError = { afterChunks: 2, detail: 'CUDA out of memory' };
        try {
          const broken = await streamOverHttp(ix);
          assert.deepEqual(broken.chunks, ['Bonjour ', 'from ']);
          assert.equal(broken.final.status, 'failed');
          assert.equal(broken.final.error.code, 'provider_error');
          assert.match(broken.final.error.message, /prediction wire\d+pred failed: CUDA out of memory/);
        } finally {
          rep.options.streamError = undefined;
        }
        rep.options.streamCanceled = true;
        try {
          const canceled = await streamOverHttp(ix);
          assert.equal(canceled.final.status, 'failed');
          assert.match(canceled.final.error.message, /was canceled/);
        } finally {
          rep.options.streamCanceled = undefined;
        }
        rep.options.predictionError = 'Prediction interrupted; please retry (code: PA)';
        try {
          const failed = await srv.api('POST', '/api/v1/runs', { interaction: ix });
          assert.equal(failed.status, 502);
          assert.equal(failed.body.error, 'provider_error');
          assert.match(failed.body.message, /failed: Prediction interrupted; please retry \(code: PA\)/);
        } finally {
          rep.options.predictionError = undefined;
        }
      });

      it("a wrong token is provider_auth with Replicate's detail; a 429 with retry-after is retried", async () => {
        const bad = await setup('replicate', replicateEnv({ apiKey: 'r8_wrong' }, { retries: 0 }));
        const auth = await srv.api('POST', '/api/v1/runs', { interaction: bad.ix });
        assert.equal(auth.status, 502);
        assert.equal(auth.body.error, 'provider_auth');
        assert.match(
          auth.body.message,
          /Replicate at http:\/\/127\.0\.0\.1:\d+ answered HTTP 401: You did not pass a valid authentication token/,
        );

        const unknown = await setup('replicate', replicateEnv({ default_model: 'someone/nothing' }, { retries: 0 }));
        const missing = await srv.api('POST', '/api/v1/runs', { interaction: unknown.ix });
        assert.equal(missing.body.error, 'provider_bad_request');
        assert.match(missing.body.message, /HTTP 404: The requested resource could not be found/);

        const { ix } = await setup('replicate', replicateEnv());
        rep.options.fail = {
          status: 429,
          title: 'Request was throttled.',
          detail: 'Request was throttled. Expected available in 1 second.',
          headers: { 'retry-after': '1' },
          times: 1,
        };
        const started = Date.now();
        const limited = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        rep.options.fail = undefined;
        assert.equal(limited.status, 200, JSON.stringify(limited.body));
        assert.ok(Date.now() - started >= 950, 'the retry waited for retry-after');
        assert.equal(limited.body.attempts[0].error.code, 'provider_rate_limited');
        assert.match(limited.body.attempts[0].error.message, /Request was throttled/);
        assert.equal(limited.body.result[0].value, 'Bonjour from Replicate');
      });

      it('lists popular language models', async () => {
        const { env } = await setup('replicate', replicateEnv());
        const from = rep.requests.length;
        const r = await srv.api('GET', `/api/v1/environments/${env}/models`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const ids = r.body.map((m: { id: string }) => m.id);
        assert.ok(ids.includes('meta/meta-llama-3-70b-instruct'), JSON.stringify(ids));
        assert.ok(
          r.body.every((m: { id: string; name: string }) => /^[\w.-]+\/[\w.-]+$/.test(m.id) && m.name),
          JSON.stringify(r.body),
        );
        assert.equal(rep.requests.length, from, 'a static list: no request');
      });
    });
  });
}
