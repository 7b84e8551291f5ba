/**
 * The audit trail (issue 18): every management change writes a row in its own transaction, with
 * who, when, from where and what changed (secrets redacted); read through the official client's
 * `auditTrail.list` and `aggregate`, scoped by role, on both databases.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

const SECRET = 'sk-provider-secret-never-in-the-trail';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the audit trail`, () => {
    let srv: TestServer;
    let auditorKey: string;
    let adminKeyId: string;

    // One client per key: each new client exchanges its key for a token, which is itself audited.
    const clients = new Map<string | undefined, ReturnType<TestServer['client']>>();
    const clientOf = (key?: string) => clients.get(key) ?? clients.set(key, srv.client(key)).get(key)!;
    const events = async (query: Record<string, unknown> = {}, key?: string): Promise<any[]> => {
      const r: any = await clientOf(key).auditTrail.list({ limit: 1000, ...query } as any);
      return r.events;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      auditorKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'auditor', role: 'auditor' })).body.value;
      adminKeyId = (await srv.api('GET', '/api/v1/apikeys')).body.find((k: any) => k.role === 'admin').id;
    });
    after(() => srv.close());

    it('records environment changes with before and after, the API key redacted', async () => {
      const env = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Audited',
          provider: 'openai',
          apiKey: SECRET,
          default_model: 'gpt-4o',
        })
      ).body;
      await srv.api('PUT', `/api/v1/environments/${env.id}`, { default_model: 'gpt-4o-mini', apiKey: `${SECRET}-2` });
      await srv.api('DELETE', `/api/v1/environments/${env.id}`);
      const trail = await events({ resourceId: env.id });
      assert.deepEqual(
        trail.map((e) => e.action),
        ['delete', 'update', 'create'],
        'newest first',
      );
      for (const e of trail) {
        assert.equal(e.event_type, 'audit');
        assert.equal(e.resource_type, 'environment');
        assert.equal(e.principal_id, `apikey:${adminKeyId}`);
        assert.equal(e.principal_type, 'apikey');
        assert.deepEqual(e.roles, ['admin']);
        assert.equal(e.project_id, srv.orrery.bootstrap.project.id);
        assert.match(e.details.ip, /^(::ffff:)?127\.0\.0\.1$|^::1$/);
        assert.ok(e.request_id);
      }
      const [, update, create] = trail;
      assert.deepEqual(update.details.changes.default_model, { before: 'gpt-4o', after: 'gpt-4o-mini' });
      assert.deepEqual(update.details.changes.api_key, { before: '[redacted]', after: '[redacted]' });
      assert.equal(update.details.changes.name, undefined, 'only what changed');
      assert.equal(create.details.changes.name.after, 'Audited');
      assert.equal(create.details.changes.api_key.after, '[redacted]');
      assert.ok(!JSON.stringify(await events()).includes(SECRET), 'the secret is nowhere in the trail');
    });

    it('records prompts, interactions (publish too), types and object deletions; not runs', async () => {
      const { interaction, prompt } = await seedEcho(srv, { name: 'AuditEcho' });
      await srv.api('PUT', `/api/v1/prompts/${prompt.id}`, { content: 'Say: {{text}}!' });
      await srv.api('POST', `/api/v1/interactions/${interaction.id}/publish`, { tags: ['stable'] });
      const run = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'x' } });
      assert.equal(run.status, 200);
      const type = (await srv.api('POST', '/api/v1/types', { name: 'AuditedType' })).body;
      await srv.api('PUT', `/api/v1/types/${type.id}`, { description: 'now described' });
      await srv.api('DELETE', `/api/v1/types/${type.id}`);
      const a = (await srv.api('POST', '/api/v1/objects', { name: 'doomed a' })).body;
      const b = (await srv.api('POST', '/api/v1/objects', { name: 'doomed b' })).body;
      await srv.api('DELETE', `/api/v1/objects/${a.id}`);
      await srv.api('POST', '/api/v1/operations', { name: 'delete', ids: [b.id] });

      const all = await events();
      const has = (type: string, action: string, id?: string) =>
        all.some((e) => e.resource_type === type && e.action === action && (!id || e.resource_id === id));
      assert.ok(has('prompt', 'create', prompt.id) && has('prompt', 'update', prompt.id));
      assert.deepEqual(all.find((e) => e.resource_type === 'prompt' && e.action === 'update').details.changes.content, {
        before: 'Say: {{text}}',
        after: 'Say: {{text}}!',
      });
      assert.ok(has('interaction', 'create', interaction.id));
      const published = all.find((e) => e.resource_type === 'interaction' && e.action === 'publish');
      assert.equal(published.details.changes.parent_id.after, interaction.id);
      assert.ok(
        has('object_type', 'create', type.id) &&
          has('object_type', 'update', type.id) &&
          has('object_type', 'delete', type.id),
      );
      assert.ok(has('object', 'delete', a.id) && has('object', 'delete', b.id));
      assert.equal(all.find((e) => e.resource_id === b.id).details.bulk, true);
      assert.equal(all.find((e) => e.resource_id === a.id).details.changes.name.before, 'doomed a');
      assert.ok(
        !all.some((e) => e.resource_type === 'run' || e.resource_id === run.body.id),
        'runs are their own record',
      );
      assert.ok(!has('object', 'create'), 'object writes other than deletion are not audited');
    });

    it('records projects, settings, keys and tokens issued', async () => {
      const proj = (await srv.api('POST', '/api/v1/projects', { name: 'Audited project' })).body;
      await srv.api('PUT', `/api/v1/projects/${proj.id}`, { description: 'described' });
      await srv.api('PUT', `/api/v1/projects/${proj.id}/configuration`, { default_model: 'gpt-4o' });
      const key = (await srv.api('POST', '/api/v1/apikeys', { name: 'short-lived', role: 'reader', project: proj.id }))
        .body;
      await srv.api('PUT', `/api/v1/apikeys/${key.id}`, { enabled: false });
      await srv.api('PUT', `/api/v1/apikeys/${key.id}`, { enabled: true });
      const token = await srv.api('POST', '/api/v1/token/issue', undefined, key.value);
      assert.equal(token.status, 200);
      await srv.api('DELETE', `/api/v1/apikeys/${key.id}`);
      await srv.api('DELETE', `/api/v1/projects/${proj.id}`);

      const trail = await events({ projectId: proj.id });
      const summary = trail.map((e) => `${e.resource_type} ${e.action}`).reverse();
      assert.deepEqual(
        summary,
        [
          'project create',
          'project update',
          'project update',
          'apikey create',
          'apikey update',
          'apikey update',
          'token create',
          'apikey delete',
          'project delete',
        ],
        'the trail of a deleted project outlives it',
      );
      const keyCreate = trail.find((e) => e.resource_type === 'apikey' && e.action === 'create');
      assert.deepEqual(keyCreate.details.changes.role, { after: 'reader' });
      assert.ok(!JSON.stringify(trail).includes(key.value), 'the key secret is never recorded');
      assert.ok(!JSON.stringify(trail).includes(token.body.token), 'nor the token');
      const tokenEvent = trail.find((e) => e.resource_type === 'token');
      assert.equal(tokenEvent.principal_id, `apikey:${key.id}`);
      assert.deepEqual(tokenEvent.roles, ['reader']);
      assert.equal(tokenEvent.event_category, 'security');
      const disabled = trail
        .filter((e) => e.resource_type === 'apikey' && e.action === 'update')
        .map((e) => e.details.changes.enabled);
      assert.deepEqual(disabled.reverse(), [
        { before: true, after: false },
        { before: false, after: true },
      ]);
      assert.deepEqual(
        trail.find((e) => e.resource_type === 'project' && e.action === 'update' && e.details.changes.configuration)
          .details.changes.configuration,
        { before: null, after: { default_model: 'gpt-4o' } },
      );
    });

    it('a refused or failed change writes no audit row', async () => {
      const before = (await events()).length;
      const { prompt } = await seedEcho(srv, { name: 'Conflicts' });
      const seeded = (await events()).length;
      const stale = await srv.api('PUT', `/api/v1/prompts/${prompt.id}`, { content: 'x', expected_edit_revision: 99 });
      assert.equal(stale.status, 409);
      await srv.api('POST', '/api/v1/types', { name: 'Twice' });
      const dup = await srv.api('POST', '/api/v1/types', { name: 'Twice' });
      assert.equal(dup.status, 409);
      const forbidden = await srv.api('POST', '/api/v1/environments', { name: 'x', provider: 'test' }, auditorKey);
      assert.equal(forbidden.status, 403);
      assert.equal((await events()).length, seeded + 1, 'one row: the first type only');
      assert.ok(seeded > before);
    });

    it('an auditor reads its project only, other roles not at all, an admin the account or one project', async () => {
      const mine = await events({}, auditorKey);
      assert.ok(mine.length > 0);
      assert.ok(
        mine.every((e) => e.project_id === srv.orrery.bootstrap.project.id),
        'only its project',
      );
      const devKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'dev', role: 'developer' })).body.value;
      await assert.rejects(
        clientOf(devKey).auditTrail.list({} as any),
        (err: any) => err.status === 403 && /audit:read/.test(err.message),
      );
      const otherProject = (await srv.api('POST', '/api/v1/projects', { name: 'Elsewhere audited' })).body;
      const all = await events();
      assert.ok(
        all.some((e) => e.project_id === otherProject.id),
        'an admin sees the account',
      );
      assert.deepEqual(
        new Set((await events({ projectId: otherProject.id })).map((e) => e.project_id)),
        new Set([otherProject.id]),
      );
      const filtered = await events({ actions: ['delete'], resourceTypes: ['object'] });
      assert.ok(filtered.length >= 2 && filtered.every((e) => e.action === 'delete' && e.resource_type === 'object'));
      const paged: any = await clientOf().auditTrail.list({ limit: 2, offset: 1 } as any);
      assert.equal(paged.events.length, 2);
      assert.equal(paged.hasNext, true);
      assert.equal(paged.events[0].event_id, all[1].event_id);
      const future: any = await clientOf().auditTrail.list({ from: '2999-01-01T00:00:00Z' } as any);
      assert.deepEqual(future.events, []);
    });

    it('aggregates counts by action, resource type and time', async () => {
      const client = clientOf();
      const all = await events();
      const r: any = await client.auditTrail.aggregate({
        groupBy: [{ dimension: 'resource_type' }, { dimension: 'action' }],
        metrics: [
          { id: 'n', operation: 'count' },
          { id: 'things', operation: 'count_distinct', field: 'resource_id' },
        ],
        limit: 200,
      } as any);
      const expected = new Map<string, number>();
      for (const e of all)
        expected.set(`${e.resource_type} ${e.action}`, (expected.get(`${e.resource_type} ${e.action}`) ?? 0) + 1);
      assert.equal(r.rows.length, expected.size);
      for (const row of r.rows)
        assert.equal(
          row.metrics.n,
          expected.get(`${row.dimensions.resource_type} ${row.dimensions.action}`),
          JSON.stringify(row),
        );
      assert.ok(r.rows.every((row: any) => row.metrics.things <= row.metrics.n));
      const byDay: any = await client.auditTrail.aggregate({
        groupBy: [{ dimension: 'time', resolution: 'day' }],
        metrics: [{ id: 'n', operation: 'count' }],
      } as any);
      assert.equal(byDay.rows.length, 1);
      assert.equal(byDay.rows[0].metrics.n, all.length);
      assert.equal(byDay.rows[0].dimensions.time, `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
      const week: any = await client.auditTrail.aggregate({
        groupBy: [{ dimension: 'time', resolution: 'week' }],
        metrics: [{ id: 'n', operation: 'count' }],
      } as any);
      assert.equal(new Date(week.rows[0].dimensions.time).getUTCDay(), 1, 'weeks start on Monday');
      const keys: any = await client.auditTrail.aggregate({
        filter: { resourceTypes: ['apikey'] },
        metrics: [{ id: 'n', operation: 'count' }],
      } as any);
      assert.equal(keys.rows[0].metrics.n, all.filter((e) => e.resource_type === 'apikey').length);

      const bad = async (body: unknown) => (await srv.api('POST', '/api/v1/audit-trail/aggregate', body)).status;
      assert.equal(await bad({ metrics: [] }), 400);
      assert.equal(await bad({ metrics: [{ id: 'bad id!', operation: 'count' }] }), 400);
      assert.equal(await bad({ metrics: [{ id: 'd', operation: 'count_distinct' }] }), 400);
      assert.equal(
        await bad({
          from: '2020-01-01T00:00:00Z',
          to: '2022-01-01T00:00:00Z',
          metrics: [{ id: 'n', operation: 'count' }],
        }),
        400,
      );
      assert.equal(await bad({ groupBy: [{ dimension: 'colour' }], metrics: [{ id: 'n', operation: 'count' }] }), 400);
      assert.equal(await bad({ from: 'yesterday', metrics: [{ id: 'n', operation: 'count' }] }), 400);
      assert.equal((await srv.api('GET', '/api/v1/audit-trail?limit=5000')).status, 400);
    });
  });
}
