/**
 * A tool loop on every OpenAI-shaped provider (Azure OpenAI, openai_compatible, Groq, Together AI,
 * Mistral AI, xAI), through the official client, blocking and streamed, against the local Chat
 * Completions wire server: each request checked whole (tools, the assistant's calls, each result
 * matched to its call, history order) and sent where that provider's API lives.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { openStream } from '../support/sse.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Each provider, its model, and the path its Chat Completions requests go to. */
const PROVIDERS: [provider: string, model: string, path: string, extra?: Record<string, unknown>][] = [
  [
    'azure_openai',
    'gpt-4o-prod',
    '/openai/deployments/gpt-4o-prod/chat/completions',
    { config: { api_version: '2024-10-21' } },
  ],
  ['openai_compatible', 'local-llama-tools', '/v1/chat/completions'],
  ['groq', 'llama-3.3-70b-versatile', '/v1/chat/completions'],
  ['togetherai', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', '/v1/chat/completions'],
  ['mistralai', 'mistral-large-latest', '/v1/chat/completions'],
  ['xai', 'grok-3', '/v1/chat/completions'],
];

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: tool loops on the OpenAI-shaped providers`, () => {
    let srv: TestServer;
    let wire: WireServer;
    const ix: Record<string, string> = {};
    const env: Record<string, string> = {};
    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer();
      for (const [provider, model, , extra] of PROVIDERS) {
        const e = await srv.api('POST', '/api/v1/environments', {
          name: provider,
          provider,
          endpoint_url: provider === 'azure_openai' ? wire.origin : wire.url,
          apiKey: 'sk-test',
          default_model: model,
          ...extra,
        });
        assert.equal(e.status, 200, JSON.stringify(e.body));
        env[provider] = e.body.id;
        const i = await srv.api('POST', '/api/v1/interactions', {
          name: `ask-${provider}`,
          status: 'draft',
          environment: e.body.id,
          prompts: [
            {
              type: 'template',
              template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' },
            },
          ],
        });
        assert.equal(i.status, 200, JSON.stringify(i.body));
        ix[provider] = i.body.id;
      }
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    for (const [provider, model, path] of PROVIDERS) {
      for (const stream of [false, true]) {
        it(`${provider}, ${stream ? 'streamed' : 'blocking'}: a tool loop to its answer, each request whole`, async () => {
          const toolResults = (body: any) => body.messages.filter((m: any) => m.role === 'tool').length;
          wire.options = {
            toolCalls: (body: any) =>
              toolResults(body) === 0
                ? [
                    { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
                    { id: 'call_b', name: 'get_weather', arguments: '{"city":"Lyon"}' },
                  ]
                : undefined,
            text: (body: any) => (toolResults(body) === 2 ? 'Warm in both.' : ''),
          };
          wire.requests.length = 0;
          const client = srv.client();
          const chunks: string[] = [];
          const first: any = await client.interactions.execute(
            ix[provider],
            { data: { city: 'Paris' }, tool_definitions: [WEATHER], conversation: true } as any,
            stream ? (c: string) => chunks.push(c) : undefined,
          );
          const firstRun: any = stream ? await client.runs.retrieve(first.id) : first;
          assert.equal(firstRun.finish_reason, 'tool_use');
          assert.deepEqual(firstRun.tool_use, [
            { id: 'call_a', tool_name: 'get_weather', tool_input: { city: 'Paris' } },
            { id: 'call_b', tool_name: 'get_weather', tool_input: { city: 'Lyon' } },
          ]);
          const continuation = {
            run: { id: first.id },
            environment: env[provider],
            options: { model },
            tools: [WEATHER],
            results: [
              { tool_use_id: 'call_b', content: 'Lyon: 20C', is_error: false },
              { tool_use_id: 'call_a', content: 'Paris: 22C', is_error: false },
            ],
          };
          let last: any;
          if (stream) {
            const next = await srv.api('POST', '/api/v1/runs/tool-results', { ...continuation, stream: true });
            assert.equal(next.status, 200, JSON.stringify(next.body));
            const s = await openStream(
              `${srv.url}/api/v1/runs/${next.body.id}/stream?access_token=${encodeURIComponent(srv.adminKey)}`,
            );
            const events = await s.all();
            const text = events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data));
            assert.equal(text.join(''), 'Warm in both.');
            last = JSON.parse(events.find((e) => e.event === 'close')!.data);
          } else {
            last = await client.runs.sendToolResults(continuation as any);
          }
          assert.equal(last.status, 'completed', JSON.stringify(last.error));
          assert.equal(last.previous_run, first.id);
          assert.deepEqual(last.result, [{ type: 'text', value: 'Warm in both.' }]);

          assert.equal(wire.requests.length, 2);
          const tools = [
            {
              type: 'function',
              function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema },
            },
          ];
          for (const r of wire.requests) {
            assert.equal(r.path, path);
            assert.deepEqual(r.body.tools, tools);
            assert.equal(r.body.stream === true, stream);
          }
          const call = (id: string, city: string) => ({
            id,
            type: 'function',
            function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
          });
          assert.deepEqual(wire.requests[0].body.messages, [{ role: 'user', content: 'Weather in Paris?' }]);
          // The results go back in the order of the calls, whatever order they were sent in.
          assert.deepEqual(wire.requests[1].body.messages, [
            { role: 'user', content: 'Weather in Paris?' },
            { role: 'assistant', content: null, tool_calls: [call('call_a', 'Paris'), call('call_b', 'Lyon')] },
            { role: 'tool', tool_call_id: 'call_a', content: 'Paris: 22C' },
            { role: 'tool', tool_call_id: 'call_b', content: 'Lyon: 20C' },
          ]);
        });
      }
    }
  });
}
