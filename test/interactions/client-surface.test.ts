/**
 * The official client's further interaction, prompt and environment methods (issue 24), driven
 * through @vertesia/client itself; bad input and other projects through raw HTTP.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from '../objects/helpers.ts';
import { startOpenAIWireServer, wireEmbedding } from '../support/openai-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the official client's interaction, prompt and environment surface`, () => {
    let srv: TestServer;
    let envId: string;
    let other: { id: string; key: string };
    before(async () => {
      srv = await startTestServer(dialect);
      envId = (
        await srv.api('POST', '/api/v1/environments', { name: 'Offline', provider: 'test', default_model: 'echo' })
      ).body.id;
      other = await secondProject(srv);
    });
    after(() => srv.close());

    /** A draft with one referenced prompt and one inline segment; published `versions` times. */
    async function family(
      name: string,
      opts: { tags?: string[]; versionTags?: string[][]; model?: string; resultSchema?: object } = {},
    ) {
      const prompt = await srv.api('POST', '/api/v1/prompts', {
        name: `${name} prompt`,
        role: 'user',
        content: 'Say {{text}}',
        content_type: 'handlebars',
        tags: ['shared'],
        inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      });
      assert.equal(prompt.status, 200, JSON.stringify(prompt.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name,
        environment: envId,
        tags: opts.tags ?? [],
        ...(opts.model ? { model: opts.model } : {}),
        ...(opts.resultSchema ? { result_schema: opts.resultSchema } : {}),
        interaction_schema: { type: 'object', properties: { text: { type: 'string' } } },
        prompts: [
          { type: 'template', template: prompt.body.id },
          { type: 'template', template: { role: 'system', content: 'Be brief.', content_type: 'text', name: 'sys' } },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      const versions = [];
      for (const tags of opts.versionTags ?? []) {
        const v = await srv.api('POST', `/api/v1/interactions/${ix.body.id}/publish`, { tags });
        assert.equal(v.status, 200, JSON.stringify(v.body));
        versions.push(v.body);
      }
      return { prompt: prompt.body, draft: ix.body, versions };
    }

    it('lists names, tags and versions by name', async () => {
      const client = srv.client();
      const a = await family('Names Alpha', { tags: ['nm-a', 'nm-both'], versionTags: [['nm-prod']] });
      const b = await family('Names Beta', { tags: ['nm-both'] });
      const names = await client.interactions.listNames();
      assert.ok(names.some((n) => n.id === a.draft.id && n.name === 'Names Alpha'));
      assert.ok(names.some((n) => n.id === b.draft.id && n.name === 'Names Beta'));
      assert.ok(names.every((n) => Object.keys(n).sort().join() === 'id,name'));
      assert.equal(
        names.some((n) => n.id === a.versions[0].id),
        false,
        'published versions are not names',
      );

      const tags = await client.interactions.listTags({ name: 'Names ' } as any);
      const both = tags.find((t) => t.tag === 'nm-both')!;
      assert.equal(both.count, 2);
      assert.deepEqual(both.interactions.map((i) => i.id).sort(), [a.draft.id, b.draft.id].sort());
      const prod = tags.find((t) => t.tag === 'nm-prod')!;
      assert.deepEqual(
        prod.interactions.map((i) => [i.id, i.version]),
        [[a.versions[0].id, 1]],
      );
      assert.equal(tags[0].tag, 'nm-both', 'most used first');
      const draftsOnly = await client.interactions.listTags({ name: 'Names ', status: ['draft'] } as any);
      assert.equal(
        draftsOnly.some((t) => t.tag === 'nm-prod'),
        false,
      );

      await srv.api('PUT', `/api/v1/interactions/${a.draft.id}`, { description: 'v2' });
      const v2 = await srv.api('POST', `/api/v1/interactions/${a.draft.id}/publish`, {});
      const byName = await client.interactions.listVersionsByName(a.draft.endpoint);
      assert.deepEqual(
        byName.map((v) => [v.id, v.version, v.status]),
        [
          [v2.body.id, 2, 'published'],
          [a.versions[0].id, 1, 'published'],
        ],
      );
      assert.deepEqual(await client.interactions.listVersionsByName('NoSuchEndpoint'), []);

      const bad = await srv.api('GET', '/api/v1/interactions/tags?status=finished');
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /status must be one of draft, published, archived/);
      // Another project sees none of it.
      assert.deepEqual((await srv.api('GET', '/api/v1/interactions/names', undefined, other.key)).body, []);
      assert.deepEqual((await srv.api('GET', '/api/v1/interactions/tags', undefined, other.key)).body, []);
      assert.deepEqual(
        (await srv.api('GET', `/api/v1/interactions/versions/${a.draft.endpoint}`, undefined, other.key)).body,
        [],
      );
    });

    it('lists endpoints with their schemas, filtered', async () => {
      const client = srv.client();
      const schema = { type: 'object', properties: { answer: { type: 'string' } } };
      const a = await family('Ep One', { tags: ['ep'], versionTags: [[], []], resultSchema: schema });
      const b = await family('Ep Two', { tags: ['ep'] });
      const drafts = await client.interactions.listEndpoints({
        tags: ['ep'],
        include_result_schema: true,
        include_params_schema: true,
      });
      assert.deepEqual(
        drafts.map((e) => [e.id, e.endpoint, e.status, e.version]),
        [
          [a.draft.id, 'EpOne', 'draft', 0],
          [b.draft.id, 'EpTwo', 'draft', 0],
        ],
      );
      assert.deepEqual(drafts[0].result_schema, schema);
      assert.deepEqual(drafts[0].params_schema, { type: 'object', properties: { text: { type: 'string' } } });
      assert.equal(drafts[1].result_schema, undefined);
      const bare = await client.interactions.listEndpoints({ tags: ['ep'] });
      assert.equal(bare[0].result_schema, undefined);
      assert.equal(bare[0].params_schema, undefined);
      const published = await client.interactions.listEndpoints({
        status: 'published' as any,
        includes: ['EpOne', 'EpTwo'],
      });
      assert.deepEqual(
        published.map((e) => [e.id, e.version]),
        [[a.versions[1].id, 2]],
      );
      const v1 = await client.interactions.listEndpoints({
        status: 'published' as any,
        version: 1,
        includes: ['EpOne'],
      });
      assert.deepEqual(
        v1.map((e) => e.id),
        [a.versions[0].id],
      );
      const excluded = await client.interactions.listEndpoints({ tags: ['ep'], excludes: ['EpOne'] });
      assert.deepEqual(
        excluded.map((e) => e.endpoint),
        ['EpTwo'],
      );
      const paged = await client.interactions.listEndpoints({ tags: ['ep'], limit: 1, offset: 1 });
      assert.deepEqual(
        paged.map((e) => e.endpoint),
        ['EpTwo'],
      );
      const tooMany = await srv.api('POST', '/api/v1/interactions/endpoints', { limit: 5000 });
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.body.message, /limit/);
      const badStatus = await srv.api('POST', '/api/v1/interactions/endpoints', { status: 'done' });
      assert.equal(badStatus.status, 400);
      assert.deepEqual((await srv.api('POST', '/api/v1/interactions/endpoints', { tags: ['ep'] }, other.key)).body, []);
    });

    it('resolves a selector or an id to what a run would use', async () => {
      const client = srv.client();
      const a = await family('Resolver', { versionTags: [['rs-stable'], []] });
      const latest = await client.interactions.resolve('Resolver');
      assert.deepEqual(latest, {
        id: a.versions[1].id,
        name: 'Resolver',
        version: 2,
        status: 'published',
        tags: [],
        resolved: {
          environment: { id: envId, name: 'Offline', provider: 'test' },
          model: 'echo',
          model_source: 'environmentDefault',
        },
      });
      const tagged = await client.interactions.resolve('Resolver@rs-stable');
      assert.equal(tagged.id, a.versions[0].id);
      assert.deepEqual(tagged.tags, ['rs-stable']);
      const draft = await client.interactions.resolve('Resolver@draft', { model: 'json' });
      assert.equal(draft.id, a.draft.id);
      assert.equal(draft.status, 'draft');
      assert.equal(draft.resolved.model, 'json');
      assert.equal(draft.resolved.model_source, 'config');
      const byVersionId = await client.interactions.resolve(a.versions[0].id);
      assert.equal(byVersionId.version, 1);
      const withModel = await family('Resolver Model', { model: 'slow' });
      const own = await client.interactions.resolve(withModel.draft.id);
      assert.deepEqual([own.resolved.model, own.resolved.model_source], ['slow', 'interaction']);
      assert.equal((await srv.api('GET', '/api/v1/interactions/resolve/Resolver@9')).status, 404);
      const noEnv = await srv.api('POST', '/api/v1/interactions', { name: 'Envless', prompts: [] });
      const refused = await srv.api('GET', `/api/v1/interactions/resolve/${noEnv.body.id}`);
      assert.equal(refused.status, 400);
      assert.match(refused.body.message, /no environment.*environment=/);
      assert.equal((await srv.api('GET', '/api/v1/interactions/resolve/Resolver', undefined, other.key)).status, 404);
    });

    it('computes facets over interactions', async () => {
      const client = srv.client();
      await family('Facet A', { tags: ['fc-x', 'fc-y'], model: 'echo' });
      await family('Facet B', { tags: ['fc-x'], model: 'echo' });
      await family('Facet C', { tags: ['fc-x'] });
      const facets = await client.interactions.computeFacets({
        facets: [
          { name: 'tags', field: 'tags' },
          { name: 'models', field: 'model' },
          { name: 'st', field: 'status' },
        ],
        query: { name: 'facet ' } as any,
      });
      assert.equal(facets.total, 3);
      assert.deepEqual(facets.tags, [
        { _id: 'fc-x', count: 3 },
        { _id: 'fc-y', count: 1 },
      ]);
      assert.deepEqual(facets.models, [
        { _id: 'echo', count: 2 },
        { _id: null, count: 1 },
      ]);
      assert.deepEqual(facets.st, [{ _id: 'draft', count: 3 }]);
      const tagged = await client.interactions.computeFacets({
        facets: [{ name: 'n', field: 'name' }],
        query: { tags: ['fc-y'] } as any,
      });
      assert.deepEqual([tagged.total, tagged.n], [1, [{ _id: 'Facet A', count: 1 }]]);
      const proto = await srv.api('POST', '/api/v1/interactions/facets', {
        facets: [{ name: '__proto__', field: 'status' }],
      });
      assert.equal(proto.status, 200, JSON.stringify(proto.body));
      assert.ok(
        Array.isArray(proto.body['__proto__']) && Object.hasOwn(proto.body, '__proto__'),
        `the facet is a data key: ${JSON.stringify(proto.body)}`,
      );
      const reserved = await srv.api('POST', '/api/v1/interactions/facets', {
        facets: [{ name: 'total', field: 'tags' }],
      });
      assert.equal(reserved.status, 400);
      assert.match(reserved.body.message, /"total" is reserved/);
      const unknown = await srv.api('POST', '/api/v1/interactions/facets', {
        facets: [{ name: 'x', field: 'prompts' }],
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /field "prompts".*status, tags, model/);
      const theirs = await srv.api(
        'POST',
        '/api/v1/interactions/facets',
        { facets: [{ name: 'tags', field: 'tags' }] },
        other.key,
      );
      assert.deepEqual(theirs.body, { total: 0, tags: [] });
    });

    it('forks interactions, with or without their prompts, and lists the forks', async () => {
      const client = srv.client();
      const a = await family('Forked', { tags: ['fk'], versionTags: [['fk-v']] });
      const fork = await client.interactions.fork(a.draft.id, {});
      assert.equal(fork.name, 'Forked (fork)');
      assert.equal(fork.endpoint, 'Forked_fork');
      assert.equal(fork.status, 'draft');
      assert.equal(fork.version, 0);
      assert.deepEqual(fork.tags, []);
      assert.notEqual(fork.id, a.draft.id);
      const shared = (fork.prompts[0] as any).template;
      assert.equal(shared.id, a.prompt.id, 'without forkPrompts the fork shares the prompt');
      assert.equal((fork.prompts[1] as any).template.content, 'Be brief.');

      const deep = await client.interactions.fork(a.draft.id, { keepTags: true, forkPrompts: true });
      assert.equal(deep.endpoint, 'Forked_fork2');
      assert.deepEqual(deep.tags, ['fk']);
      const forkedPrompt = (deep.prompts[0] as any).template;
      assert.notEqual(forkedPrompt.id, a.prompt.id);
      assert.equal(forkedPrompt.name, 'Forked prompt (fork)');
      assert.equal(forkedPrompt.content, 'Say {{text}}');
      const fromVersion = await client.interactions.fork(a.versions[0].id, { keepTags: true });
      assert.deepEqual(fromVersion.tags, ['fk-v']);
      assert.equal((fromVersion.prompts[0] as any).template.content, 'Say {{text}}');

      const forks = await client.interactions.listForks(a.draft.id);
      assert.deepEqual(forks.map((f) => f.id).sort(), [fork.id, deep.id].sort());
      assert.deepEqual(
        (await client.interactions.listForks(a.versions[0].id)).map((f) => f.id),
        [fromVersion.id],
      );
      assert.deepEqual(await client.interactions.listForks(fork.id), []);
      // A fork is a draft of its own: not a version of its source, and it runs.
      assert.deepEqual(
        (await client.interactions.listVersions(a.draft.id)).map((v) => v.id),
        [a.versions[0].id],
      );
      const run = await srv.api('POST', '/api/v1/execute', { interaction: 'Forked_fork@draft', data: { text: 'hi' } });
      assert.equal(run.status, 200, JSON.stringify(run.body));

      const elsewhere = await srv.api('POST', `/api/v1/interactions/${a.draft.id}/fork`, { targetProject: other.id });
      assert.equal(elsewhere.status, 400);
      assert.match(elsewhere.body.message, /targetProject/);
      assert.equal((await srv.api('POST', `/api/v1/interactions/${a.draft.id}/fork`, {}, other.key)).status, 404);
      assert.equal(
        (await srv.api('GET', `/api/v1/interactions/${a.draft.id}/forks`, undefined, other.key)).status,
        404,
      );
      assert.equal((await srv.api('GET', '/api/v1/interactions/nope/forks')).status, 404);
    });

    it('exports interactions with their schemas', async () => {
      const client = srv.client();
      const schema = { type: 'object', properties: { n: { type: 'number' } } };
      const a = await family('Exported', { tags: ['xp'], versionTags: [['xp-v1'], []], resultSchema: schema });
      const latest = await client.interactions.export({ name: 'Exported' });
      assert.equal(latest.length, 1);
      assert.equal(latest[0].id, a.versions[1].id);
      assert.equal(latest[0].version, 2);
      assert.deepEqual(latest[0].result_schema, schema);
      assert.deepEqual(
        latest[0].prompts!.map((s: any) => s.template),
        [
          { id: a.prompt.id, inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
          { id: (a.draft.prompts[1] as any).template.id },
        ],
      );
      const several = await client.interactions.export({ name: 'Exported', versions: ['draft', 1] });
      assert.deepEqual(
        several.map((r) => [r.id, r.version]),
        [
          [a.draft.id, 0],
          [a.versions[0].id, 1],
        ],
      );
      const byTag = await client.interactions.export({ name: 'Exported', tags: ['xp-v1'], versions: ['draft', 1, 2] });
      assert.deepEqual(
        byTag.map((r) => r.id),
        [a.versions[0].id],
      );
      const bad = await srv.api('POST', '/api/v1/interactions/export', { versions: ['newest'] });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /versions/);
      assert.deepEqual((await srv.api('POST', '/api/v1/interactions/export', {}, other.key)).body, []);
    });

    it("lists the project's stored interactions in the catalog", async () => {
      const client = srv.client();
      const pub = await family('Catalog Pub', { versionTags: [[], ['ct']] });
      const draft = await family('Catalog Draft');
      const all = await client.interactions.catalog.list();
      assert.deepEqual(
        all.find((e) => e.name === 'CatalogPub'),
        { type: 'stored', id: pub.versions[1].id, name: 'CatalogPub', version: 2, published: true },
      );
      assert.deepEqual(
        all.find((e) => e.name === 'CatalogDraft'),
        { type: 'draft', id: draft.draft.id, name: 'CatalogDraft', version: 0, published: false },
      );
      assert.ok(all.every((e) => e.type === 'stored' || e.type === 'draft'));
      const drafts = await client.interactions.catalog.list({ status: 'draft' as any });
      assert.ok(drafts.some((e) => e.id === pub.draft.id) && drafts.every((e) => e.type === 'draft'));
      const published = await client.interactions.catalog.list({ status: 'published' as any });
      assert.equal(
        published.some((e) => e.name === 'CatalogDraft'),
        false,
      );
      assert.deepEqual(
        (await client.interactions.catalog.list({ tag: 'ct' })).map((e) => e.id),
        [pub.versions[1].id],
      );
      assert.deepEqual(
        (await client.interactions.catalog.listStoredInteractions({ tag: 'ct' })).map((e) => e.id),
        [pub.versions[1].id],
      );
      const bad = await srv.api('GET', '/api/v1/interactions/catalog?status=gone');
      assert.equal(bad.status, 400);
      assert.deepEqual((await srv.api('GET', '/api/v1/interactions/catalog', undefined, other.key)).body, []);
    });

    it('refuses an async execution of another type by name: interactions and conversations (agents) only', async () => {
      const client = srv.client();
      await assert.rejects(
        client.interactions.executeAsync({ type: 'workflow', interaction: 'Forked' } as any),
        (err: any) => {
          assert.equal(err.status, 400);
          return true;
        },
      );
      const raw = await srv.api('POST', '/api/v1/execute/async', { type: 'workflow', interaction: 'x' });
      assert.equal(raw.status, 400);
      assert.equal(raw.body.error, 'bad_request');
      assert.match(
        raw.body.message,
        /type must be "interaction" \(an interaction run\) or "conversation" \(an agent\)/,
      );
    });

    it('lists the interactions that use a prompt, its (absent) versions, and forks prompts', async () => {
      const client = srv.client();
      const a = await family('Usage', { versionTags: [[]] });
      // A second draft using the same prompt; a third that used it only in its published version.
      const b = await srv.api('POST', '/api/v1/interactions', {
        name: 'Usage Two',
        prompts: [{ type: 'template', template: a.prompt.id }],
      });
      const c = await srv.api('POST', '/api/v1/interactions', {
        name: 'Usage Three',
        prompts: [{ type: 'template', template: a.prompt.id }],
      });
      await srv.api('POST', `/api/v1/interactions/${c.body.id}/publish`, {});
      await srv.api('PUT', `/api/v1/interactions/${c.body.id}`, { prompts: [] });
      const usage = await client.prompts.listInteractions(a.prompt.id);
      assert.equal(usage.prompt, a.prompt.id);
      assert.deepEqual(
        usage.interactions.map((i) => [i.id, i.name, i.versions]).sort(),
        [
          [a.draft.id, 'Usage', [{ version: 1 }]],
          [b.body.id, 'Usage Two', []],
          [c.body.id, 'Usage Three', [{ version: 1 }]],
        ].sort(),
      );
      assert.deepEqual(await client.prompts.listVersions(a.prompt.id), []);
      assert.equal((await srv.api('GET', `/api/v1/prompts/${a.prompt.id}/versions`, undefined, other.key)).status, 404);
      assert.equal(
        (await srv.api('GET', `/api/v1/prompts/${a.prompt.id}/interactions`, undefined, other.key)).status,
        404,
      );

      const fork = await client.prompts.fork(a.prompt.id, { keepTags: true });
      assert.equal(fork.name, 'Usage prompt (fork)');
      assert.equal(fork.content, 'Say {{text}}');
      assert.deepEqual(fork.tags, ['shared']);
      const bare = await client.prompts.fork(a.prompt.id, {});
      assert.deepEqual(bare.tags, []);
      const forks = await client.prompts.listForks(a.prompt.id);
      assert.deepEqual(forks.map((f) => f.id).sort(), [fork.id, bare.id].sort());
      assert.ok(forks.every((f) => f.role === 'user' && f.content_type === 'handlebars' && !('content' in f)));
      assert.deepEqual((await client.prompts.listInteractions(fork.id)).interactions, []);
      const elsewhere = await srv.api('POST', `/api/v1/prompts/${a.prompt.id}/fork`, { targetProject: other.id });
      assert.equal(elsewhere.status, 400);
      assert.match(elsewhere.body.message, /targetProject/);
      assert.equal((await srv.api('GET', `/api/v1/prompts/${a.prompt.id}/forks`, undefined, other.key)).status, 404);
    });

    it('answers prompt field options and facets', async () => {
      const client = srv.client();
      await srv.api('POST', '/api/v1/prompts', {
        name: 'Opt sys',
        role: 'system',
        content: 'S',
        content_type: 'text',
        tags: ['opt-a'],
      });
      await srv.api('POST', '/api/v1/prompts', {
        name: 'Opt jst',
        role: 'user',
        content: 'return "x"',
        content_type: 'jst',
        tags: ['opt-a', 'opt-b'],
      });
      const roles = await client.prompts.options('role');
      assert.ok(roles.includes('system') && roles.includes('user'));
      assert.deepEqual(roles, [...roles].sort());
      const types = await client.prompts.options('content_type');
      assert.ok(types.includes('jst') && types.includes('text'));
      const tags = await client.prompts.options('tags');
      assert.ok(tags.includes('opt-a') && tags.includes('opt-b'));
      const bad = await srv.api('GET', '/api/v1/prompts/options/content');
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /field "content".*role, content_type, tags/);
      assert.equal((await srv.api('GET', '/api/v1/prompts/options/constructor')).status, 400);
      assert.deepEqual((await srv.api('GET', '/api/v1/prompts/options/role', undefined, other.key)).body, []);

      const facets = await client.prompts.computeFacets({
        facets: [
          { name: 'roles', field: 'role' },
          { name: 'tags', field: 'tags' },
        ],
        query: { name: 'opt ' } as any,
      });
      assert.equal(facets.total, 2);
      assert.deepEqual(facets.roles, [
        { _id: 'system', count: 1 },
        { _id: 'user', count: 1 },
      ]);
      assert.deepEqual(facets.tags, [
        { _id: 'opt-a', count: 2 },
        { _id: 'opt-b', count: 1 },
      ]);
      const byRole = await client.prompts.computeFacets({
        facets: [{ name: 'n', field: 'name' }],
        query: { role: 'system', tags: ['opt-a'] } as any,
      });
      assert.deepEqual(byRole.n, [{ _id: 'Opt sys', count: 1 }]);
      const unknown = await srv.api('POST', '/api/v1/prompts/facets', { facets: [{ name: 'x', field: 'content' }] });
      assert.equal(unknown.status, 400);
      const empty = await srv.api('POST', '/api/v1/prompts/facets', { facets: [] });
      assert.equal(empty.status, 400);
      assert.match(empty.body.message, /facets/);
      assert.equal(
        (await srv.api('POST', '/api/v1/prompts/facets', { facets: [{ name: 'r', field: 'role' }] }, other.key)).body
          .total,
        0,
      );
    });

    it('enables and disables models and updates the config of an environment', async () => {
      const client = srv.client();
      const env = await client.environments.create({
        name: 'Models',
        provider: 'test' as any,
        config: { a: 1, b: 2 },
      } as any);
      const enabled = await client.environments.enableModel(env.id, { model_id: 'echo' });
      assert.deepEqual(
        enabled.enabled_models!.map((m: any) => m.id),
        ['echo'],
      );
      const twice = await client.environments.enableModel(env.id, { model_id: 'json' });
      assert.deepEqual(
        twice.enabled_models!.map((m: any) => m.id),
        ['echo', 'json'],
      );
      const again = await client.environments.enableModel(env.id, { model_id: 'echo' });
      assert.deepEqual(
        again.enabled_models!.map((m: any) => m.id),
        ['echo', 'json'],
        'enabling an enabled model changes nothing',
      );
      // The enabled models are now the environment's listing.
      assert.deepEqual(
        (await client.environments.listModels(env.id)).map((m) => m.id),
        ['echo', 'json'],
      );
      const unknown = await srv.api('POST', `/api/v1/environments/${env.id}/models/enabled`, { model_id: 'gpt-99' });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /"gpt-99" is not among the models of environment "Models": .*echo/);
      assert.equal((await srv.api('POST', `/api/v1/environments/${env.id}/models/enabled`, {})).status, 400);

      const disabled = await client.environments.disableModel(env.id, 'echo');
      assert.deepEqual(
        disabled.enabled_models!.map((m: any) => m.id),
        ['json'],
      );
      const notEnabled = await srv.api('DELETE', `/api/v1/environments/${env.id}/models/enabled/echo`);
      assert.equal(notEnabled.status, 404);
      assert.match(notEnabled.body.message, /"echo" is not enabled.*json/);

      const updated = await client.environments.updateConfig(env.id, { config: { b: 3, c: 4 } as any });
      assert.deepEqual(updated.config, { a: 1, b: 3, c: 4 });
      assert.deepEqual(
        updated.enabled_models!.map((m: any) => m.id),
        ['json'],
        'enabled_models kept when not given',
      );
      const replaced = await client.environments.updateConfig(env.id, {
        enabled_models: [{ id: 'slow', name: 'slow' }] as any,
      });
      assert.deepEqual(replaced.enabled_models, [{ id: 'slow', name: 'slow' }]);
      assert.deepEqual(replaced.config, { a: 1, b: 3, c: 4 });
      assert.deepEqual((await client.environments.retrieve(env.id)).config, { a: 1, b: 3, c: 4 });
      const badModels = await srv.api('PUT', `/api/v1/environments/${env.id}/config`, {
        enabled_models: [{ name: 'no id' }],
      });
      assert.equal(badModels.status, 400);
      assert.match(badModels.body.message, /enabled_models\[0\]/);
      // Text PostgreSQL cannot store is a 400 that names the place, on both databases.
      const lone = await srv.api(
        'PUT',
        `/api/v1/environments/${env.id}/config`,
        JSON.parse('{"config": {"x": "\\ud800"}}'),
      );
      assert.equal(lone.status, 400);
      assert.match(lone.body.message, /config\.x must be well-formed Unicode/);
      assert.equal(
        (await srv.api('PUT', `/api/v1/environments/${env.id}`, JSON.parse('{"config": {"y": "a\\u0000b"}}'))).status,
        400,
      );

      assert.equal(
        (await srv.api('POST', `/api/v1/environments/${env.id}/models/enabled`, { model_id: 'echo' }, other.key))
          .status,
        404,
      );
      assert.equal(
        (await srv.api('DELETE', `/api/v1/environments/${env.id}/models/enabled/slow`, undefined, other.key)).status,
        404,
      );
      assert.equal(
        (await srv.api('PUT', `/api/v1/environments/${env.id}/config`, { config: { x: 1 } }, other.key)).status,
        404,
      );
    });
    it('embeds text with an environment: the built-in embedder for test, the provider for openai_compatible', async () => {
      const client = srv.client();
      const offline = await client.environments.embeddings(envId, {
        inputs: [
          { type: 'text', text: 'tides and moons' },
          { type: 'text', text: 'tides and moons' },
          { type: 'text', text: 'tax forms' },
        ],
      });
      assert.equal(offline.model, 'orrery-hashed-ngrams-384');
      assert.equal(offline.results.length, 3);
      const [a, b, c] = offline.results.map((r) => r.outputs[0].values);
      assert.equal(a.length, 384);
      assert.deepEqual(a, b);
      const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i], 0);
      assert.ok(Math.abs(dot(a, a) - 1) < 1e-5 && dot(a, c) < 0.5);

      const wire = await startOpenAIWireServer({ models: ['text-embedding-3-small'] });
      try {
        const env = await client.environments.create({
          name: 'Wire',
          provider: 'openai_compatible' as any,
          endpoint_url: wire.url,
          apiKey: 'sk-test',
        } as any);
        const answer = await client.environments.embeddings(env.id, {
          inputs: [{ type: 'text', text: 'hello' }],
          model: 'text-embedding-3-small',
        });
        assert.equal(answer.model, 'text-embedding-3-small');
        const expected = wireEmbedding('hello', 1536);
        assert.ok(answer.results[0].outputs[0].values.every((v, i) => Math.abs(v - expected[i]) < 1e-6));
        assert.equal(wire.requests.find((q) => q.path === '/v1/embeddings')!.body.input[0], 'hello');
        const noModel = await srv.api('POST', `/api/v1/environments/${env.id}/embeddings`, {
          inputs: [{ type: 'text', text: 'x' }],
        });
        assert.equal(noModel.status, 400);
        assert.match(noModel.body.message, /"model"/);
      } finally {
        await wire.close();
      }
      const image = await srv.api('POST', `/api/v1/environments/${envId}/embeddings`, {
        inputs: [{ type: 'image', source: { url: 'http://x' } }],
      });
      assert.equal(image.status, 400);
      assert.match(image.body.message, /text inputs only/);
      assert.equal((await srv.api('POST', `/api/v1/environments/${envId}/embeddings`, { inputs: [] })).status, 400);
      const anthropic = await srv.api('POST', '/api/v1/environments', {
        name: 'Claude',
        provider: 'anthropic',
        apiKey: 'sk-ant-x',
      });
      const refused = await srv.api('POST', `/api/v1/environments/${anthropic.body.id}/embeddings`, {
        inputs: [{ type: 'text', text: 'x' }],
      });
      assert.equal(refused.status, 400);
      assert.match(refused.body.message, /cannot embed/);
      assert.equal(
        (
          await srv.api(
            'POST',
            `/api/v1/environments/${envId}/embeddings`,
            { inputs: [{ type: 'text', text: 'x' }] },
            other.key,
          )
        ).status,
        404,
      );
    });
  });
}
