/**
 * `orrery import` of runs with their conversations: a tool loop run on the source (tool_use, then
 * a continuation linked by previous_run) is copied with its calls and its chain, the earlier turn
 * first although the source lists the later one first; the copy continues on the target with the
 * whole history on the wire. A run naming a previous run the target does not hold is a 400.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { runImport } from './helpers.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: orrery import of conversations`, () => {
    let src: TestServer;
    let dst: TestServer;
    let openai: WireServer;
    let first: any;
    let second: any;

    before(async () => {
      src = await startTestServer('sqlite');
      dst = await startTestServer(dialect);
      openai = await startOpenAIWireServer();
      const c = src.client();
      const env: any = await c.environments.create({ name: 'Tools', provider: 'test', default_model: 'tools' } as any);
      const inter: any = await c.interactions.create({
        name: 'Weather',
        status: 'draft',
        environment: env.id,
        prompts: [
          { type: 'template', template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' } },
        ],
      } as any);
      first = await c.interactions.execute(inter.id, {
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
        conversation: true,
      } as any);
      assert.equal(first.finish_reason, 'tool_use');
      second = await c.runs.sendToolResults({
        run: { id: first.id },
        environment: env.id,
        tools: [WEATHER],
        conversation: first.conversation,
        results: first.tool_use.map((t: any) => ({ tool_use_id: t.id, content: 'Paris: 21C', is_error: false })),
      } as any);
      assert.equal(second.previous_run, first.id);
      assert.equal(second.finish_reason, 'stop');
    });
    after(async () => {
      await dst?.close();
      await src?.close();
      await openai?.close();
    });

    it('copies tool_use and previous_run, the earlier turn first, and the copy continues with the whole history', async () => {
      const done = await runImport(dst, {
        from: src.url,
        key: src.adminKey,
        include: 'environments,prompts,interactions,runs',
      });
      assert.equal(done.code, 0, done.out);
      const c = dst.client();
      const runs: any[] = (await c.runs.list({ limit: 100 } as any)) as any;
      assert.equal(runs.length, 2, done.out);
      const copies = await Promise.all(runs.map((r) => c.runs.retrieve(r.id) as Promise<any>));
      const copyOfFirst = copies.find((r) => r.finish_reason === 'tool_use');
      const copyOfSecond = copies.find((r) => r.finish_reason === 'stop');
      assert.ok(copyOfFirst && copyOfSecond);
      assert.deepEqual(copyOfFirst.tool_use, first.tool_use);
      assert.equal(copyOfFirst.previous_run, undefined);
      assert.equal(copyOfSecond.previous_run, copyOfFirst.id, "the continuation's copy continues the first run's copy");
      assert.deepEqual(copyOfSecond.prompt, ((await src.client().runs.retrieve(second.id)) as any).prompt);
      // previous_run is filterable on the copies as on runs made here.
      const continued = await dst.api('GET', `/api/v1/runs?previous_run=${copyOfFirst.id}`);
      assert.equal(continued.status, 200, JSON.stringify(continued.body));
      assert.deepEqual(
        continued.body.map((r: any) => r.id),
        [copyOfSecond.id],
      );

      // A second import copies nothing again.
      const again = await runImport(dst, { from: src.url, key: src.adminKey, include: 'interactions,runs' });
      assert.equal(again.code, 0, again.out);
      assert.equal(((await c.runs.list({ limit: 100 } as any)) as any[]).length, 2);

      // The copy continues: the provider receives the source conversation's history, in order.
      const env: any = await c.environments.create({
        name: 'Wire',
        provider: 'openai',
        endpoint_url: openai.url,
        apiKey: 'sk-test',
        default_model: 'gpt-4o-mini',
      } as any);
      openai.options = { text: 'Bring an umbrella anyway.' };
      openai.requests.length = 0;
      const third: any = await c.runs.sendUserMessage({
        run: { id: copyOfSecond.id },
        environment: env.id,
        options: { model: 'gpt-4o-mini' },
        tools: [WEATHER],
        message: 'And tomorrow?',
      } as any);
      assert.equal(third.status, 'completed', JSON.stringify(third.error));
      assert.equal(third.previous_run, copyOfSecond.id);
      const call = first.tool_use[0];
      assert.deepEqual(openai.requests[0].body.messages, [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: call.id,
              type: 'function',
              function: { name: 'get_weather', arguments: JSON.stringify(call.tool_input) },
            },
          ],
        },
        { role: 'tool', tool_call_id: call.id, content: 'Paris: 21C' },
        { role: 'assistant', content: second.result[0].value },
        { role: 'user', content: 'And tomorrow?' },
      ]);
    });

    it('a run naming a previous run this project does not hold is a 400 naming it; bad tool_use is a 400', async () => {
      const interaction = ((await dst.client().interactions.list()) as any[])[0].id;
      const now = new Date().toISOString();
      const post = (run: Record<string, unknown>) =>
        dst.api('POST', '/api/v1/import/runs', {
          source: 'https://source.example',
          source_id: `src-${Math.random()}`,
          source_version: null,
          run: { status: 'completed', interaction: { id: interaction }, created_at: now, updated_at: now, ...run },
        });
      const lost = await post({ previous_run: 'no-such-run' });
      assert.equal(lost.status, 400, JSON.stringify(lost.body));
      assert.match(lost.body.message, /run\.previous_run no-such-run is no run of this project/);
      const bad = await post({ tool_use: [{ tool_name: 'x' }] });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.match(bad.body.message, /run\.tool_use/);
    });
  });
}
