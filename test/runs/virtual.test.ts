/**
 * Issue 16, virtual environments: virtual_lb (weights, failover with a cooldown) and
 * virtual_mediator (concurrency, first success, a mediator's judgement). Every attempt is a child
 * run listed by GET /runs?parent=; the virtual run holds the chosen answer. Through HTTP and the
 * official client, on both databases, with the test provider and a loopback OpenAI wire server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: virtual environments`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let offline: string;
    let remote: string;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        apiKey: null,
        text: (body) => {
          const messages = body.messages as Array<{ content: string }>;
          const asked = messages.at(-1)!.content;
          if (!asked.includes('The answers:')) return 'the wire answer';
          // The judge: scores 9 for the wire's answer, 3 for any other, and picks the wire's.
          const answers = [...asked.matchAll(/--- answer (\d+) ---\n([^\n]*)/g)].map((m) => m[2]);
          const scores = answers.map((a) => (a === 'the wire answer' ? 9 : 3));
          return JSON.stringify({ best: scores.indexOf(9), scores });
        },
        usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
      });
      offline = (
        await srv.api('POST', '/api/v1/environments', { name: 'offline', provider: 'test', config: { retries: 0 } })
      ).body.id;
      remote = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'remote',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          config: { retries: 0 },
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const virtualInteraction = async (provider: string, config: Record<string, unknown>) => {
      const env = await srv.api('POST', '/api/v1/environments', { name: `virtual ${++n}`, provider, config });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `virtual ix ${n}`,
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } }],
      });
      return { env: env.body.id as string, ix: ix.body.id as string };
    };
    const children = async (id: string) => (await srv.api('GET', `/api/v1/runs?parent=${id}&limit=100`)).body;
    const childList = (body: any): any[] =>
      Array.isArray(body) ? body : (body.runs ?? body.results ?? body.items ?? []);

    it('refuses a malformed config when saved, and entries that name nothing runnable when run', async () => {
      const none = await srv.api('POST', '/api/v1/environments', {
        name: 'empty lb',
        provider: 'virtual_lb',
        config: {},
      });
      assert.equal(none.status, 400);
      assert.match(none.body.message, /needs config\.entries/);
      const badRef = await srv.api('POST', '/api/v1/environments', {
        name: 'bad lb',
        provider: 'virtual_lb',
        config: { entries: [{ model: 'gpt-4o', weight: 1 }] },
      });
      assert.equal(badRef.status, 400);
      assert.match(
        badRef.body.message,
        /config\.entries\[0\]\.model must be "<environment id>::<model>", got "gpt-4o"/,
      );
      const tooMany = await srv.api('POST', '/api/v1/environments', {
        name: 'big',
        provider: 'virtual_mediator',
        config: { entries: Array.from({ length: 17 }, () => ({ model: `${offline}::echo` })) },
      });
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.body.message, /at most 16/);
      const missing = await virtualInteraction('virtual_lb', { entries: [{ model: 'no-such-env::echo', weight: 1 }] });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: missing.ix, data: { text: 'hi' } });
      assert.equal(r.status, 400);
      assert.match(
        r.body.message,
        /names environment no-such-env \(in "no-such-env::echo"\), which this project does not have/,
      );
      const nested = await virtualInteraction('virtual_lb', { entries: [{ model: `${missing.env}::x`, weight: 1 }] });
      const r2 = await srv.api('POST', '/api/v1/runs', { interaction: nested.ix, data: { text: 'hi' } });
      assert.equal(r2.status, 400);
      assert.match(r2.body.message, /another virtual environment/);
    });

    it('virtual_lb: runs one entry by weight as a child run, and holds its answer', async () => {
      const { env, ix } = await virtualInteraction('virtual_lb', {
        entries: [
          { model: `${offline}::echo`, weight: 1 },
          { model: `${remote}::m`, weight: 0 },
        ],
      });
      const models = await srv.api('GET', `/api/v1/environments/${env}/models`);
      assert.deepEqual(
        models.body.map((m: any) => m.id),
        [`${offline}::echo`, `${remote}::m`],
      );
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { text: 'balanced' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.result, [{ type: 'text', value: 'balanced' }]);
      assert.equal(r.body.attempts, undefined, 'one attempt');
      const kids = childList(await children(r.body.id));
      assert.equal(kids.length, 1);
      assert.equal(kids[0].parent, r.body.id);
      assert.equal(kids[0].environment.id, offline);
      assert.equal(kids[0].model, 'echo');
      assert.equal(kids[0].status, 'completed');
      const child = await srv.client().runs.retrieve(kids[0].id);
      assert.deepEqual(child.result, [{ type: 'text', value: 'balanced' }]);
      assert.equal(child.parent, r.body.id);
    });

    it('virtual_lb with failover: a failing entry is skipped for a cooldown, and the next one answers', async () => {
      const { ix } = await virtualInteraction('virtual_lb', {
        failover: true,
        cooldown_ms: 60_000,
        entries: [
          { model: `${offline}::error`, weight: 1e9 },
          { model: `${offline}::echo`, weight: 1 },
        ],
      });
      const first = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { text: 'fail over' } });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(first.body.result, [{ type: 'text', value: 'fail over' }]);
      assert.deepEqual(
        first.body.attempts.map((a: any) => a.status),
        ['failed', 'completed'],
      );
      assert.equal(first.body.attempts[0].error.code, 'provider_error');
      const kids = childList(await children(first.body.id));
      assert.deepEqual(kids.map((k: any) => [k.model, k.status]).sort(), [
        ['echo', 'completed'],
        ['error', 'failed'],
      ]);
      assert.deepEqual(kids.map((k: any) => k.id).sort(), first.body.attempts.map((a: any) => a.run).sort());
      // The failed entry cools down: the next run goes straight to the one that works.
      const second = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { text: 'again' } });
      assert.equal(second.status, 200);
      assert.equal(childList(await children(second.body.id)).length, 1);
      // Without failover, the entry's failure is the run's.
      const strict = await virtualInteraction('virtual_lb', { entries: [{ model: `${offline}::error`, weight: 1 }] });
      const failed = await srv.api('POST', '/api/v1/runs', { interaction: strict.ix, data: { text: 'x' } });
      assert.equal(failed.status, 502);
      assert.equal(failed.body.error, 'provider_error');
    });

    it('virtual_lb streams the attempt that answers, through the official client', async () => {
      const { ix } = await virtualInteraction('virtual_lb', { entries: [{ model: `${offline}::echo`, weight: 1 }] });
      const chunks: string[] = [];
      const client = srv.client();
      const started = await client.interactions.execute(ix, { data: { text: 'one two three four' } }, (c: string) =>
        chunks.push(c),
      );
      assert.ok(chunks.length > 1, `several chunks, got ${chunks.length}`);
      assert.equal(chunks.join(''), 'one two three four');
      const final = await client.runs.retrieve(started.id);
      assert.equal(final.status, 'completed');
      assert.deepEqual(final.result, [{ type: 'text', value: 'one two three four' }]);
      assert.equal(childList(await children(started.id)).length, 1);
    });

    it('virtual_mediator without mediators: the first success wins', async () => {
      const { ix } = await virtualInteraction('virtual_mediator', {
        entries: [{ model: `${offline}::slow:400` }, { model: `${offline}::echo` }, { model: `${offline}::error` }],
      });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { text: 'race' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.result, [{ type: 'text', value: 'race' }]);
      const winner = r.body.attempts.find((a: any) => a.status === 'completed');
      const winning = await srv.api('GET', `/api/v1/runs/${winner.run}`);
      assert.equal(winning.body.model, 'echo', 'the fast entry answered first');
      // The slow entry still finishes, recorded as a child run.
      await new Promise((done) => setTimeout(done, 800));
      const kids = childList(await children(r.body.id));
      assert.deepEqual(kids.map((k: any) => k.status).sort(), ['completed', 'completed', 'failed']);
    });

    it("virtual_mediator with a mediator: every answer judged, the best chosen, each child's evaluation recorded", async () => {
      const { ix } = await virtualInteraction('virtual_mediator', {
        entries: [{ model: `${offline}::echo` }, { model: `${remote}::m` }],
        mediators: [{ model: `${remote}::judge` }],
        max_concurrent_requests: 1,
      });
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { text: 'the echo answer' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.result, [{ type: 'text', value: 'the wire answer' }]);
      const judged = wire.requests.slice(from).find((q) => q.body.model === 'judge');
      assert.ok(judged, 'the mediator was asked');
      assert.match(judged!.body.messages[0].content, /judge answers/);
      assert.match(judged!.body.messages[1].content, /\[user\]\nthe echo answer/);
      const kids = childList(await children(r.body.id));
      const byModel = Object.fromEntries(kids.map((k: any) => [k.model, k]));
      assert.deepEqual(byModel.m.evaluation, { score: 9, selected: true });
      assert.deepEqual(byModel.echo.evaluation, { score: 3, selected: false });
      const viaClient = await srv.client().runs.retrieve(byModel.m.id);
      assert.deepEqual((viaClient as any).evaluation, { score: 9, selected: true });
      // A streamed mediated run gets the chosen answer whole, then closes.
      const chunks: string[] = [];
      const started = await srv
        .client()
        .interactions.execute(ix, { data: { text: 'streamed' } }, (c: string) => chunks.push(c));
      assert.equal(chunks.join(''), 'the wire answer');
      assert.equal((await srv.client().runs.retrieve(started.id)).status, 'completed');
    });
  });
}
