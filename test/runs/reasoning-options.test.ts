/**
 * Reasoning models get what they accept, as llumiverse decides it: no default temperature (nor
 * the sampling options they refuse) for OpenAI's reasoning models, `reasoning_effort` forwarded,
 * Claude's thinking budget as `thinking`, Gemini's as `thinkingConfig`, the model's reasoning as a
 * `thoughts` result part, `_option_id` sets checked, another provider's options refused by name.
 * Through HTTP and the official client against wire servers that refuse what the real APIs refuse.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { startVertexWireServer, type VertexWireServer } from '../support/vertex-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: reasoning models and their options`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    let vertex: VertexWireServer;
    const ix: Record<string, string> = {};
    let n = 0;

    const interaction = async (env: string, model: string, model_options?: Record<string, unknown>) => {
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: `Reason ${++n}`,
        environment: env,
        model,
        ...(model_options ? { model_options } : {}),
        prompts: [
          { type: 'template', template: { role: 'user', content: 'Think: {{q}}', content_type: 'handlebars' } },
        ],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const env = async (body: Record<string, unknown>) => {
      const r = await srv.api('POST', '/api/v1/environments', { name: `env ${++n}`, ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const run = (interaction: string, config: Record<string, unknown> = {}) =>
      srv.api('POST', '/api/v1/runs', { interaction, data: { q: 'why?' }, config });
    /** A streamed run: its SSE text (to its close event), then the run as stored. */
    const streamed = async (interaction: string, config: Record<string, unknown>) => {
      const created = await srv.api('POST', '/api/v1/runs', { interaction, data: { q: 'why?' }, config, stream: true });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const sse = await (
        await fetch(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
      ).text();
      const stored = await srv.api('GET', `/api/v1/runs/${created.body.id}`);
      return { sse, run: stored.body };
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      anthropic = await startAnthropicWireServer({ apiKey: null });
      vertex = await startVertexWireServer();
      const oa = await env({ provider: 'openai', endpoint_url: openai.url, api_key: 'sk-test' });
      const an = await env({ provider: 'anthropic', endpoint_url: anthropic.url, api_key: 'sk-ant-test' });
      const gx = await env({ provider: 'vertexai', endpoint_url: vertex.origin, apiKey: vertex.serviceAccount() });
      ix.o3 = await interaction(oa, 'o3-mini');
      ix.gpt5 = await interaction(oa, 'gpt-5-mini', { _option_id: 'openai-thinking', effort: 'low' });
      ix.gpt4 = await interaction(oa, 'gpt-4o-mini');
      ix.claude = await interaction(an, 'claude-sonnet-4-5');
      ix.opus = await interaction(an, 'claude-opus-4-6');
      ix.gemini = await interaction(gx, 'gemini-2.5-flash');
      ix.gemini3 = await interaction(gx, 'gemini-3-pro-preview');
    });
    after(async () => {
      await srv.close();
      await openai.close();
      await anthropic.close();
      await vertex.close();
    });

    it('a reasoning model gets no default temperature; what it refuses is dropped and recorded', async () => {
      const plain = await run(ix.o3!);
      assert.equal(plain.status, 200, JSON.stringify(plain.body));
      assert.equal(plain.body.status, 'completed');
      let body = openai.requests.at(-1)!.body;
      assert.equal('temperature' in body, false, 'no temperature is sent to o3-mini');
      assert.equal('temperature' in plain.body.config, false, 'the run records none');
      assert.equal(plain.body.config.dropped, undefined);

      const given = await run(ix.o3!, {
        temperature: 0.2,
        model_options: { top_p: 0.5, presence_penalty: 1, max_tokens: 300, reasoning_effort: 'high' },
      });
      assert.equal(given.status, 200, JSON.stringify(given.body));
      assert.equal(given.body.status, 'completed', JSON.stringify(given.body.error));
      body = openai.requests.at(-1)!.body;
      assert.deepEqual(
        { t: body.temperature, p: body.top_p, pp: body.presence_penalty, e: body.reasoning_effort },
        { t: undefined, p: undefined, pp: undefined, e: 'high' },
      );
      assert.equal(body.max_completion_tokens, 300);
      assert.deepEqual(given.body.config.dropped.sort(), ['presence_penalty', 'temperature', 'top_p']);
      const stored = await srv.api('GET', `/api/v1/runs/${given.body.id}`);
      assert.deepEqual(stored.body.config.dropped.sort(), ['presence_penalty', 'temperature', 'top_p']);
    });

    it("an interaction's option set with an effort reaches gpt-5 as reasoning_effort, also streamed through the client", async () => {
      const r = await srv.client().interactions.execute(ix.gpt5!, { data: { q: 'why?' } });
      assert.equal(r.status, 'completed');
      const body = openai.requests.at(-1)!.body;
      assert.equal(body.reasoning_effort, 'low');
      assert.equal('temperature' in body, false);
      const s = await streamed(ix.gpt5!, { model_options: { effort: 'medium' } });
      assert.equal(s.run.status, 'completed', JSON.stringify(s.run.error));
      assert.equal(openai.requests.at(-1)!.body.stream, true);
      assert.equal(openai.requests.at(-1)!.body.reasoning_effort, 'medium');
    });

    it('a model that takes a temperature keeps the default 0.7; an effort it refuses is the wire 400, as from OpenAI', async () => {
      const r = await run(ix.gpt4!);
      assert.equal(r.body.status, 'completed');
      assert.equal(openai.requests.at(-1)!.body.temperature, 0.7);
      assert.equal(r.body.config.temperature, 0.7);
      const refused = await run(ix.gpt4!, { model_options: { reasoning_effort: 'low' } });
      assert.equal(refused.status, 502, JSON.stringify(refused.body));
      assert.match(refused.body.message, /reasoning_effort' is not supported with this model/);
    });

    it('include_thoughts returns the reasoning of a compatible server as a thoughts part, outside the answer text', async () => {
      openai.options = { apiKey: null, text: 'Because.', reasoningContent: 'The user asks why. ' };
      try {
        const r = await run(ix.gpt4!, { model_options: { include_thoughts: true } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.result, [
          { type: 'thoughts', value: 'The user asks why. ' },
          { type: 'text', value: 'Because.' },
        ]);
        const without = await run(ix.gpt4!);
        assert.deepEqual(without.body.result, [{ type: 'text', value: 'Because.' }]);
      } finally {
        openai.options = { apiKey: null };
      }
    });

    it('Claude: thinking_budget_tokens becomes thinking, max_tokens makes room, temperature is dropped; thoughts come back', async () => {
      anthropic.options = { apiKey: null, thinking: 'Let me think step by step.', text: 'Answer.' };
      try {
        const r = await run(ix.claude!, {
          temperature: 0.3,
          model_options: { thinking_budget_tokens: 2048, include_thoughts: true, top_k: 5 },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed', JSON.stringify(r.body.error));
        const body = anthropic.requests.at(-1)!.body;
        assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 2048 });
        assert.equal(body.max_tokens, 2048 + 4096);
        assert.equal('temperature' in body, false);
        assert.equal('top_k' in body, false);
        assert.deepEqual(r.body.config.dropped.sort(), ['temperature', 'top_k']);
        assert.deepEqual(r.body.result, [
          { type: 'thoughts', value: 'Let me think step by step.' },
          { type: 'text', value: 'Answer.' },
        ]);
        const s = await streamed(ix.claude!, {
          model_options: { thinking_budget_tokens: 1024, include_thoughts: true, max_tokens: 3000 },
        });
        assert.equal(s.run.status, 'completed', JSON.stringify(s.run.error));
        assert.equal(anthropic.requests.at(-1)!.body.max_tokens, 3000);
        assert.deepEqual(s.run.result, [
          { type: 'thoughts', value: 'Let me think step by step.' },
          { type: 'text', value: 'Answer.' },
        ]);
        const chunks = s.sse.slice(0, s.sse.indexOf('event: close'));
        assert.doesNotMatch(chunks, /step by step/, 'the answer stream carries the answer only');
        assert.match(chunks, /Answer\./);
        const hidden = await run(ix.claude!, { model_options: { thinking_budget_tokens: 1024 } });
        assert.deepEqual(hidden.body.result, [{ type: 'text', value: 'Answer.' }], 'thoughts only when asked for');
      } finally {
        anthropic.options = { apiKey: null };
      }
    });

    it('Claude: an effort on a model that thinks adaptively is adaptive thinking with output_config', async () => {
      const r = await run(ix.opus!, { model_options: { effort: 'high' } });
      assert.equal(r.body.status, 'completed', JSON.stringify(r.body.error));
      const body = anthropic.requests.at(-1)!.body;
      assert.deepEqual(body.thinking, { type: 'adaptive', display: 'omitted' });
      assert.deepEqual(body.output_config, { effort: 'high' });
    });

    it('Gemini: a budget and include_thoughts as thinkingConfig, thought summaries as thoughts; Gemini 3 takes an effort as thinkingLevel', async () => {
      vertex.options = { thoughts: 'Considering the question.', text: 'Because.' };
      try {
        const r = await run(ix.gemini!, { model_options: { thinking_budget_tokens: 512, include_thoughts: true } });
        assert.equal(r.body.status, 'completed', JSON.stringify(r.body.error));
        const sent = vertex.requests.filter((q) => q.kind !== 'token').at(-1)!.body;
        assert.deepEqual(sent.generationConfig.thinkingConfig, { includeThoughts: true, thinkingBudget: 512 });
        assert.deepEqual(r.body.result, [
          { type: 'thoughts', value: 'Considering the question.' },
          { type: 'text', value: 'Because.' },
        ]);
        const level = await run(ix.gemini3!, { model_options: { effort: 'low' } });
        assert.equal(level.body.status, 'completed', JSON.stringify(level.body.error));
        const sent3 = vertex.requests.filter((q) => q.kind !== 'token').at(-1)!.body;
        assert.deepEqual(sent3.generationConfig.thinkingConfig, { includeThoughts: false, thinkingLevel: 'LOW' });
        assert.deepEqual(level.body.result, [{ type: 'text', value: 'Because.' }]);
      } finally {
        vertex.options = {};
      }
    });

    it('options of another provider, unknown keys of an option set, unapplied options and bad values are 400s naming them, before any call', async () => {
      const before = openai.requests.length + anthropic.requests.length;
      const cases: [string, Record<string, unknown>, RegExp][] = [
        [
          ix.o3!,
          { model_options: { thinking_budget_tokens: 2048 } },
          /thinking_budget_tokens is not an option of openai model "o3-mini"/,
        ],
        [
          ix.claude!,
          { model_options: { reasoning_effort: 'low' } },
          /reasoning_effort is not an option of anthropic model/,
        ],
        [ix.claude!, { model_options: { image_detail: 'low' } }, /image_detail is not an option of anthropic model/],
        [
          ix.gpt4!,
          { model_options: { _option_id: 'openai-text', top_k: 3 } },
          /model_options.top_k is not an option of the openai-text option set/,
        ],
        [
          ix.gpt4!,
          { model_options: { _option_id: 'openai-dalle' } },
          /_option_id "openai-dalle" is not a text option set/,
        ],
        [ix.gpt4!, { model_options: { service_tier: 'priority' } }, /service_tier is not applied by Orrery/],
        // Claude's cache breakpoints apply on Claude (test/providers/prompt-cache.test.ts); OpenAI has no such option.
        [ix.gpt4!, { model_options: { cache_enabled: true } }, /cache_enabled places Claude cache breakpoints/],
        [
          ix.claude!,
          { model_options: { thinking_budget_tokens: 100 } },
          /thinking_budget_tokens must be an integer from 1024/,
        ],
        [
          ix.claude!,
          { model_options: { thinking_budget_tokens: 4096, max_tokens: 4000 } },
          /max_tokens must be larger than model_options.thinking_budget_tokens/,
        ],
        [ix.claude!, { model_options: { effort: 'minimal' } }, /effort must be one of low, medium, high, xhigh, max/],
        [ix.o3!, { model_options: { effort: 'extreme' } }, /effort must be one of none, minimal/],
        [
          ix.o3!,
          { model_options: { effort: 'low', reasoning_effort: 'high' } },
          /effort and model_options.reasoning_effort differ/,
        ],
        [ix.gpt4!, { model_options: { include_thoughts: 'yes' } }, /include_thoughts must be true or false/],
      ];
      for (const [interaction, config, message] of cases) {
        const r = await run(interaction, config);
        assert.equal(r.status, 400, `${JSON.stringify(config)}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message);
      }
      assert.equal(openai.requests.length + anthropic.requests.length, before, 'no provider was called');
      // Defaults of options Orrery does not apply are no-ops.
      const ok = await run(ix.gpt4!, { model_options: { service_tier: 'auto', _option_id: 'openai-text' } });
      assert.equal(ok.body.status, 'completed', JSON.stringify(ok.body));
    });

    it('image_detail is sent on every image part to OpenAI', async () => {
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: `Look ${++n}`,
        environment: (await srv.api('GET', `/api/v1/interactions/${ix.gpt4}`)).body.environment,
        model: 'gpt-4o-mini',
        interaction_schema: { type: 'object', properties: { photo: { type: 'string', editor: 'media' } } },
        prompts: [{ type: 'template', template: { role: 'user', content: 'What is it?', content_type: 'text' } }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const png =
        'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
      const done = await srv.api('POST', '/api/v1/runs', {
        interaction: r.body.id,
        data: { photo: png },
        config: { model_options: { image_detail: 'low' } },
      });
      assert.equal(done.body.status, 'completed', JSON.stringify(done.body));
      const content = openai.requests.at(-1)!.body.messages.at(-1).content;
      const image = content.find((c: any) => c.type === 'image_url');
      assert.equal(image.image_url.detail, 'low');
    });
  });
}
