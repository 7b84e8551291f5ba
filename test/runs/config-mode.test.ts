/**
 * Issue 52, item 3: `config.configMode` decides whose options a run applies, and the
 * interaction-level `temperature`, `max_tokens` and `restriction` of Vertesia's Create Interaction
 * payload are stored (create, update, publish, fork) and applied; a run planned again in another
 * process (a streamed run followed elsewhere) is sent every option it was first planned with.
 * Through the official client and HTTP, against an OpenAI wire server recording each request.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const PROMPT = [{ type: 'template', template: { role: 'user', content: 'Say {{q}}', content_type: 'handlebars' } }];

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: configMode and the interaction's own options`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let envA: string;
    let envB: string;
    let n = 0;

    const interaction = async (body: Record<string, unknown>) => {
      const r = await srv.api('POST', '/api/v1/interactions', { name: `Opts ${++n}`, prompts: PROMPT, ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const run = (interaction: string, config?: Record<string, unknown>) =>
      srv.api('POST', '/api/v1/runs', { interaction, data: { q: 'hi' }, ...(config ? { config } : {}) });
    const runCount = async () => (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length as number;
    /** The request the wire server got last, and from which environment's key. */
    const sent = () => openai.requests.at(-1)!;
    const refused = async (interaction: string, config: Record<string, unknown>, message: RegExp) => {
      const before = await runCount();
      const wire = openai.requests.length;
      const r = await run(interaction, config);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.message, message);
      assert.equal(await runCount(), before, 'no run is stored');
      assert.equal(openai.requests.length, wire, 'no provider is called');
    };

    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer({ apiKey: null });
      const env = async (name: string, model: string) => {
        const r = await srv.api('POST', '/api/v1/environments', {
          name,
          provider: 'openai',
          endpoint_url: openai.url,
          api_key: `sk-${name}`,
          default_model: model,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.id as string;
      };
      envA = await env('env-a', 'gpt-4o-mini');
      envB = await env('env-b', 'gpt-4.1-mini');
    });
    after(async () => {
      await srv.close();
      await openai.close();
    });

    it('temperature, max_tokens and restriction are stored on create, update, publish and fork', async () => {
      const client = srv.client();
      const created = await client.interactions.create({
        name: 'Stored options',
        status: 'draft',
        prompts: PROMPT,
        environment: envA,
        temperature: 0.3,
        max_tokens: 77,
        restriction: 'STANDARD',
      } as never);
      const got = (await client.interactions.retrieve(created.id)) as any;
      assert.deepEqual([got.temperature, got.max_tokens, got.restriction], [0.3, 77, 'STANDARD']);
      await client.interactions.update(created.id, { temperature: 1.1, max_tokens: 12 } as never);
      const updated = (await client.interactions.retrieve(created.id)) as any;
      assert.deepEqual([updated.temperature, updated.max_tokens], [1.1, 12]);
      const published = await srv.api('POST', `/api/v1/interactions/${created.id}/publish`, {});
      assert.equal(published.status, 200, JSON.stringify(published.body));
      assert.deepEqual([published.body.temperature, published.body.max_tokens], [1.1, 12]);
      const fork = await srv.api('POST', `/api/v1/interactions/${created.id}/fork`, {});
      assert.equal(fork.status, 200, JSON.stringify(fork.body));
      assert.deepEqual([fork.body.temperature, fork.body.max_tokens], [1.1, 12]);
      // null clears them
      const cleared = await srv.api('PUT', `/api/v1/interactions/${created.id}`, {
        temperature: null,
        max_tokens: null,
      });
      assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
      assert.equal('temperature' in cleared.body, false);
      assert.equal('max_tokens' in cleared.body, false);
    });

    it('bad values and the storage levels Orrery does not apply are 400s naming the field', async () => {
      const post = (body: Record<string, unknown>) =>
        srv.api('POST', '/api/v1/interactions', { name: `Bad ${++n}`, prompts: PROMPT, ...body });
      let r = await post({ temperature: 5 });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /temperature/);
      r = await post({ max_tokens: 0 });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /max_tokens/);
      r = await post({ restriction: 'RESTRICTED' });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /^restriction RESTRICTED is not applied by Orrery yet/);
      r = await post({ restriction: 'DEBUG' });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /^restriction DEBUG is not applied/);
      r = await post({ restriction: 'secret' });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /^restriction must be STANDARD, RESTRICTED or DEBUG/);
      const ix = await interaction({ environment: envA });
      r = await srv.api('PUT', `/api/v1/interactions/${ix.id}`, { restriction: 'RESTRICTED' });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /^restriction RESTRICTED is not applied/);
    });

    it("the interaction's temperature and max_tokens reach the provider, under its model_options and the run's config", async () => {
      const ix = await interaction({ environment: envA, temperature: 0.25, max_tokens: 77 });
      const r = await srv.client().interactions.execute(ix.id, { data: { q: 'hi' } });
      assert.equal(r.status, 'completed');
      assert.deepEqual([sent().body.temperature, sent().body.max_completion_tokens], [0.25, 77]);
      assert.deepEqual([(r.config as any)?.temperature, (r.config as any)?.max_tokens], [0.25, 77]);

      const under = await interaction({
        environment: envA,
        temperature: 0.25,
        max_tokens: 77,
        model_options: { temperature: 0.5 },
      });
      assert.equal((await run(under.id)).body.status, 'completed');
      assert.deepEqual([sent().body.temperature, sent().body.max_completion_tokens], [0.5, 77], 'model_options wins');
      const over = await run(under.id, { temperature: 0.9, max_tokens: 5 });
      assert.equal(over.body.status, 'completed', JSON.stringify(over.body));
      assert.deepEqual([sent().body.temperature, sent().body.max_completion_tokens], [0.9, 5], "the run's config wins");
    });

    it("RUN_AND_INTERACTION_CONFIG (the default): the interaction's options, the run's over them", async () => {
      const ix = await interaction({ environment: envA, model: 'gpt-4o', model_options: { top_p: 0.4, seed: 3 } });
      const r = await run(ix.id, { configMode: 'RUN_AND_INTERACTION_CONFIG', model_options: { seed: 9 } });
      assert.equal(r.body.status, 'completed', JSON.stringify(r.body));
      const body = sent().body;
      assert.deepEqual([body.model, body.top_p, body.seed, body.temperature], ['gpt-4o', 0.4, 9, 0.7]);
      assert.equal(r.body.config.configMode, 'RUN_AND_INTERACTION_CONFIG');
    });

    it("RUN_CONFIG_ONLY: the run's environment, model and options alone; it must name its environment", async () => {
      const ix = await interaction({
        environment: envA,
        model: 'gpt-4o',
        temperature: 0.2,
        max_tokens: 40,
        model_options: { top_p: 0.4, seed: 3 },
      });
      const r = await run(ix.id, { configMode: 'RUN_CONFIG_ONLY', environment: envB });
      assert.equal(r.body.status, 'completed', JSON.stringify(r.body));
      let req = sent();
      assert.equal(req.headers.authorization, 'Bearer sk-env-b', "the run's environment");
      assert.equal(req.body.model, 'gpt-4.1-mini', "the run's environment's default model, not the interaction's");
      assert.equal(req.body.temperature, 0.7, "the default temperature, not the interaction's");
      for (const k of ['top_p', 'seed', 'max_completion_tokens'])
        assert.equal(k in req.body, false, `no ${k} from the interaction`);
      assert.equal(r.body.config.model, 'gpt-4.1-mini');
      assert.equal(r.body.config.environment, envB);

      const own = await srv.client().interactions.execute(ix.id, {
        data: { q: 'hi' },
        config: { configMode: 'RUN_CONFIG_ONLY', environment: envA, model: 'gpt-4o-mini', model_options: { seed: 5 } },
      } as never);
      assert.equal(own.status, 'completed');
      req = sent();
      assert.deepEqual([req.body.model, req.body.seed, 'top_p' in req.body], ['gpt-4o-mini', 5, false]);

      await refused(
        ix.id,
        { configMode: 'RUN_CONFIG_ONLY' },
        /^config\.configMode RUN_CONFIG_ONLY .* needs config\.environment/,
      );
    });

    it("INTERACTION_CONFIG_ONLY: the interaction's options alone; the run's own are refused by name", async () => {
      const ix = await interaction({
        environment: envA,
        model: 'gpt-4o',
        temperature: 0.2,
        model_options: { top_p: 0.4 },
      });
      const r = await srv
        .client()
        .interactions.execute(ix.id, { data: { q: 'hi' }, config: { configMode: 'INTERACTION_CONFIG_ONLY' } } as never);
      assert.equal(r.status, 'completed');
      const body = sent().body;
      assert.deepEqual([body.model, body.temperature, body.top_p], ['gpt-4o', 0.2, 0.4]);
      await refused(
        ix.id,
        { configMode: 'INTERACTION_CONFIG_ONLY', model: 'gpt-4o-mini', model_options: { seed: 1 } },
        /^config\.configMode INTERACTION_CONFIG_ONLY .*config\.model, config\.model_options would not apply/,
      );
      await refused(ix.id, { configMode: 'INTERACTION_CONFIG_ONLY', environment: envB }, /config\.environment/);
      await refused(
        ix.id,
        { configMode: 'SOMETIMES' },
        /^config\.configMode must be one of RUN_AND_INTERACTION_CONFIG/,
      );
    });

    it('a streamed run followed in another process is sent every option it was planned with', async () => {
      const ix = await interaction({
        environment: envA,
        temperature: 0.25,
        max_tokens: 77,
        model_options: { top_p: 0.3, seed: 7, stop: ['END'] },
      });
      const created = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.id,
        data: { q: 'hi' },
        stream: true,
        config: { model_options: { presence_penalty: 0.5 } },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.status, 'created');
      // A second server on the same database: the run's plan is not in its memory, so it plans again.
      const other = await startTestServer(dialect, { dataDir: srv.dataDir, databaseUrl: srv.databaseUrl });
      try {
        const wire = openai.requests.length;
        const sse = await (
          await fetch(`${other.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
        ).text();
        assert.match(sse, /event: close|"status":"completed"/);
        assert.equal(openai.requests.length, wire + 1, 'the other server called the provider once');
        const body = sent().body;
        assert.equal(body.stream, true);
        assert.deepEqual(
          {
            t: body.temperature,
            m: body.max_completion_tokens,
            p: body.top_p,
            s: body.seed,
            stop: body.stop,
            pp: body.presence_penalty,
          },
          { t: 0.25, m: 77, p: 0.3, s: 7, stop: ['END'], pp: 0.5 },
        );
      } finally {
        await other.close();
      }
      const stored = await srv.api('GET', `/api/v1/runs/${created.body.id}`);
      assert.equal(stored.body.status, 'completed', JSON.stringify(stored.body.error));
    });
  });
}
