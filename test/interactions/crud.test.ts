import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: environments, prompts and interactions`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('manages environments through the official client; the provider key is never returned', async () => {
      const client = srv.client();
      const env = await client.environments.create({
        name: 'OpenAI',
        provider: 'openai' as any,
        apiKey: 'sk-provider-secret-1234',
        default_model: 'gpt-4o-mini',
      } as any);
      assert.equal(env.name, 'OpenAI');
      assert.equal((env as any).apikey_hint, '…1234');
      assert.equal(JSON.stringify(env).includes('provider-secret'), false);
      const got = await client.environments.retrieve(env.id);
      assert.equal(JSON.stringify(got).includes('provider-secret'), false);
      const listed = await client.environments.list();
      assert.ok(listed.some((e) => e.id === env.id));
      assert.equal(JSON.stringify(listed).includes('provider-secret'), false);
      const updated = await client.environments.update(env.id, { default_model: 'gpt-4o' } as any);
      assert.equal(updated.default_model, 'gpt-4o');
      assert.equal((updated as any).has_api_key, true);
      // Stored encrypted: the raw database row does not hold the key either.
      const row = await srv.orrery.database.db
        .selectFrom('environments')
        .selectAll()
        .where('id', '=', env.id)
        .executeTakeFirstOrThrow();
      assert.equal(JSON.stringify(row).includes('provider-secret'), false);
      assert.ok(row.api_key_enc?.startsWith('v1.'));
      assert.equal((await srv.api('DELETE', `/api/v1/environments/${env.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/environments/${env.id}`)).status, 404);
    });

    it('lists providers with the test provider marked, and its models', async () => {
      const providers = await srv.api('GET', '/api/v1/providers');
      const test = providers.body.find((p: any) => p.id === 'test');
      assert.equal(test.test, true);
      assert.match(test.name, /test/i);
      assert.ok(providers.body.some((p: any) => p.id === 'openai' && p.test === false));
      const env = await srv.api('POST', '/api/v1/environments', { name: 'T', provider: 'test' });
      const models = await srv.api('GET', `/api/v1/environments/${env.body.id}/models`);
      assert.deepEqual(models.body.map((m: any) => m.id).sort(), [
        'echo',
        'error',
        'error_mid_stream',
        'flaky',
        'json',
        'rate_limit',
        'slow',
        'stall',
        'tools',
      ]);
    });

    it('refuses bad environments', async () => {
      const noProvider = await srv.api('POST', '/api/v1/environments', { name: 'x' });
      assert.equal(noProvider.status, 400);
      const unknown = await srv.api('POST', '/api/v1/environments', { name: 'x', provider: 'skynet' });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /unknown provider "skynet".*openai/);
      const badUrl = await srv.api('POST', '/api/v1/environments', {
        name: 'x',
        provider: 'openai_compatible',
        endpoint_url: 'ftp://x',
      });
      assert.equal(badUrl.status, 400);
      assert.match(badUrl.body.message, /endpoint_url/);
      const wrongType = await srv.api('POST', '/api/v1/environments', { name: 42, provider: 'test' });
      assert.equal(wrongType.status, 400);
      assert.match(wrongType.body.message, /name/);
    });

    it('creates, updates, lists and deletes prompts and interactions through the official client', async () => {
      const client = srv.client();
      const env = await client.environments.create({
        name: 'Test',
        provider: 'test' as any,
        default_model: 'echo',
      } as any);
      const prompt = await client.prompts.create({
        name: 'greet',
        role: 'user' as any,
        content: 'Hello {{name}}',
        content_type: 'handlebars' as any,
      } as any);
      assert.equal(prompt.content, 'Hello {{name}}');
      const interaction = await client.interactions.create({
        name: 'Greeter',
        status: 'draft' as any,
        environment: env.id,
        description: 'says hello',
        prompts: [
          { type: 'template', template: prompt.id },
          { type: 'template', template: { role: 'system', content: 'Be brief.', content_type: 'text', name: 'sys' } },
        ],
      } as any);
      assert.equal(interaction.name, 'Greeter');
      assert.equal(interaction.endpoint, 'Greeter');
      const got = await client.interactions.retrieve(interaction.id);
      assert.equal(got.prompts.length, 2);
      const [seg0, seg1] = got.prompts as any[];
      assert.deepEqual(
        {
          type: seg0.type,
          id: seg0.template.id,
          role: seg0.template.role,
          name: seg0.template.name,
          content_type: seg0.template.content_type,
        },
        { type: 'template', id: prompt.id, role: 'user', name: 'greet', content_type: 'handlebars' },
      );
      assert.equal(seg1.template.content, 'Be brief.');
      const list = await client.interactions.list({} as any);
      assert.ok(list.some((i: any) => i.id === interaction.id && i.name === 'Greeter'));
      const updated = await client.interactions.update(interaction.id, { description: 'changed' } as any);
      assert.equal(updated.description, 'changed');
      assert.equal(updated.edit_revision, 2);
      const stale = await srv.api('PUT', `/api/v1/interactions/${interaction.id}`, {
        description: 'x',
        expected_edit_revision: 1,
      });
      assert.equal(stale.status, 409);
      const p2 = await client.prompts.update(prompt.id, { content: 'Hi {{name}}' } as any);
      assert.equal(p2.content, 'Hi {{name}}');
      assert.deepEqual(await client.interactions.delete(interaction.id), { id: interaction.id });
      assert.equal((await srv.api('GET', `/api/v1/interactions/${interaction.id}`)).status, 404);
      await client.prompts.delete(prompt.id);
      assert.equal((await srv.api('GET', `/api/v1/prompts/${prompt.id}`)).status, 404);
    });

    it('refuses broken templates and unknown references', async () => {
      const broken = await srv.api('POST', '/api/v1/prompts', {
        name: 'b',
        role: 'user',
        content: 'Hello {{#if x}}',
        content_type: 'handlebars',
      });
      assert.equal(broken.status, 400);
      assert.match(broken.body.message, /"b"/);
      const badJst = await srv.api('POST', '/api/v1/prompts', {
        name: 'j',
        role: 'user',
        content: 'Hi ${name',
        content_type: 'jst',
      });
      assert.equal(badJst.status, 400);
      const badRole = await srv.api('POST', '/api/v1/prompts', {
        name: 'r',
        role: 'wizard',
        content: 'x',
        content_type: 'text',
      });
      assert.equal(badRole.status, 400);
      assert.match(badRole.body.message, /role/);
      const missing = await srv.api('POST', '/api/v1/prompts', { name: 'm', role: 'user' });
      assert.equal(missing.status, 400);
      const unknownTemplate = await srv.api('POST', '/api/v1/interactions', {
        name: 'u',
        status: 'draft',
        prompts: [{ type: 'template', template: 'no-such-prompt' }],
      });
      assert.equal(unknownTemplate.status, 404);
      assert.match(unknownTemplate.body.message, /no-such-prompt/);
      const unknownEnv = await srv.api('POST', '/api/v1/interactions', {
        name: 'u',
        status: 'draft',
        environment: 'no-such-env',
        prompts: [],
      });
      assert.equal(unknownEnv.status, 404);
      const badSchema = await srv.api('POST', '/api/v1/interactions', {
        name: 'u',
        prompts: [],
        result_schema: { type: 'nonsense' },
      });
      assert.equal(badSchema.status, 400);
      assert.match(badSchema.body.message, /result_schema/);
      assert.equal((await srv.api('PUT', '/api/v1/interactions/nope', { name: 'x' })).status, 404);
      assert.equal((await srv.api('DELETE', '/api/v1/prompts/nope')).status, 404);
    });

    it('publishes versions and lists them', async () => {
      const env = await srv.api('POST', '/api/v1/environments', { name: 'T', provider: 'test', default_model: 'echo' });
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'Pub',
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content: 'v1 {{text}}', content_type: 'handlebars' } }],
      });
      const v1 = await srv.api('POST', `/api/v1/interactions/${ix.body.id}/publish`, { tags: ['stable'] });
      assert.equal(v1.status, 200, JSON.stringify(v1.body));
      assert.equal(v1.body.version, 1);
      assert.equal(v1.body.status, 'published');
      await srv.api('PUT', `/api/v1/interactions/${ix.body.id}`, {
        prompts: [{ type: 'template', template: { role: 'user', content: 'v2 {{text}}', content_type: 'handlebars' } }],
      });
      const v2 = await srv.api('POST', `/api/v1/interactions/${ix.body.id}/publish`, {});
      assert.equal(v2.body.version, 2);
      const versions = await srv.api('GET', `/api/v1/interactions/${ix.body.id}/versions`);
      assert.deepEqual(
        versions.body.map((v: any) => v.version),
        [2, 1],
      );
      const run = (sel: string) => srv.api('POST', '/api/v1/execute', { interaction: sel, data: { text: 'x' } });
      assert.equal((await run('Pub@draft')).body.result[0].value, 'v2 x');
      assert.equal((await run('Pub@1')).body.result[0].value, 'v1 x');
      assert.equal((await run('Pub@stable')).body.result[0].value, 'v1 x');
      assert.equal((await run('Pub')).body.result[0].value, 'v2 x');
      assert.equal((await run('Pub@9')).status, 404);
      assert.equal((await run('Nope')).status, 404);
    });
  });
}
