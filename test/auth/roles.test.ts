/**
 * Roles and permissions (issue 18): every route of the API is declared in ROUTE_PERMISSIONS,
 * and a key of each role is let through or refused (403 naming the permission) route by route.
 * Then what each role means end to end, through HTTP and the official client.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { can, installPermissions, ROLE_PERMISSIONS, ROUTE_PERMISSIONS } from '../../src/auth/permissions.ts';
import { KEY_ROLES, type KeyRole } from '../../src/auth/principal.ts';
import { upload } from '../objects/helpers.ts';

/** The path of a route key with every parameter filled with a name that matches nothing. */
const concrete = (path: string) => path.replace(/:[A-Za-z]+/g, 'perm-probe').replace('*', 'perm-probe/file.txt');

describe('the permission table', () => {
  it('a route without a declared permission stops the server from starting', async () => {
    const app = Fastify();
    const start = async () => {
      await app.register(
        async (authed) => {
          installPermissions(authed);
          authed.get('/runs', async () => 'declared');
          authed.get('/something-new', async () => 'forgotten');
        },
        { prefix: '/api/v1' },
      );
      await app.ready();
    };
    await assert.rejects(start(), /GET \/something-new has no permission/);
    await app.close();
  });

  it('every role is a subset of admin and the read roles change nothing', () => {
    for (const role of KEY_ROLES) for (const p of ROLE_PERMISSIONS[role]) assert.ok(can('admin', p), `${role} ${p}`);
    for (const role of ['reader', 'auditor'] as const) {
      for (const p of ROLE_PERMISSIONS[role]) assert.match(p, /:read$/, `${role} may only read, has ${p}`);
    }
    assert.ok(!can('developer', 'project:admin') && !can('developer', 'audit:read'));
    assert.ok(
      can('executor', 'interaction:execute') &&
        !can('executor', 'interaction:write') &&
        !can('executor', 'content:delete'),
    );
  });
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: roles and permissions`, () => {
    let srv: TestServer;
    const keys = {} as Record<KeyRole, string>;

    before(async () => {
      srv = await startTestServer(dialect);
      keys.admin = srv.adminKey;
      for (const role of KEY_ROLES.filter((r) => r !== 'admin')) {
        const r = await srv.api('POST', '/api/v1/apikeys', { name: `${role} key`, role });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.role, role);
        keys[role] = r.body.value;
      }
    });
    after(() => srv.close());

    it('the table names every route of the API, and nothing else', () => {
      const registered = new Set(
        srv.orrery.routes
          .filter((r) => /^\w+ \/api\/v1\//.test(r) && !r.endsWith('/openapi.json'))
          .map((r) => r.replace(' /api/v1', ' ')),
      );
      assert.ok(registered.size > 100, `${registered.size} routes`);
      const declared = new Set(Object.keys(ROUTE_PERMISSIONS));
      assert.deepEqual(
        [...registered].filter((k) => !declared.has(k)),
        [],
        'every route has a permission',
      );
      assert.deepEqual(
        [...declared].filter((k) => !registered.has(k)),
        [],
        'every declared route exists',
      );
    });

    it('route by route, a key of each role is let through or refused with the permission named', async () => {
      const wrong: string[] = [];
      for (const [route, needed] of Object.entries(ROUTE_PERMISSIONS)) {
        const [method, path] = route.split(' ');
        for (const role of KEY_ROLES) {
          const body = method === 'GET' || method === 'DELETE' ? undefined : {};
          const r = await srv.api(method, `/api/v1${concrete(path)}`, body, keys[role]);
          const allowed = needed === 'authenticated' || can(role, needed);
          if (allowed && r.status === 403 && r.body?.details?.permission)
            wrong.push(`${role} ${route}: refused ${JSON.stringify(r.body)}`);
          if (!allowed) {
            if (r.status !== 403)
              wrong.push(`${role} ${route}: expected 403, got ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`);
            else if (r.body.details?.permission !== needed || !r.body.message.includes(needed))
              wrong.push(`${role} ${route}: 403 without the permission: ${JSON.stringify(r.body)}`);
          }
          // 501 is a deliberate refusal (collection permissions), not a failure.
          if (r.status >= 500 && r.status !== 501)
            wrong.push(`${role} ${route}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        }
      }
      assert.deepEqual(wrong, []);
    });

    it('an executor executes and reads runs, creates objects, and changes nothing else', async () => {
      const { interaction } = await seedEcho(srv);
      const exec = srv.client(keys.executor);
      const run: any = await exec.interactions.execute(interaction.id, { data: { text: 'as executor' } } as any);
      assert.equal(run.status, 'completed');
      assert.equal(((await exec.runs.retrieve(run.id)) as any).id, run.id);
      const obj: any = await exec.objects.create({ name: 'made by an executor' } as any);
      await assert.rejects(
        exec.objects.delete(obj.id),
        (err: any) => err.status === 403 && /content:delete/.test(err.message),
      );
      await assert.rejects(
        exec.objects.update(obj.id, { name: 'renamed' } as any),
        (err: any) => err.status === 403 && /content:write/.test(err.message),
      );
      await assert.rejects(
        exec.interactions.create({ name: 'nope' } as any),
        (err: any) => err.status === 403 && /interaction:write/.test(err.message),
      );
      const bulk = await srv.api('POST', '/api/v1/operations', { name: 'delete', ids: [obj.id] }, keys.executor);
      assert.equal(bulk.status, 403);
      assert.match(bulk.body.message, /content:delete/);
      const created = await srv.api(
        'POST',
        '/api/v1/operations',
        { name: 'create', ids: [], params: { objects: [{ name: 'bulk by executor' }] } },
        keys.executor,
      );
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(
        (await srv.api('GET', `/api/v1/objects/${obj.id}`)).body.name,
        'made by an executor',
        'nothing was changed',
      );
    });

    /** A 403 in the JSON error shape, naming the permission the change needs. */
    const refused = (r: { status: number; body: any }, permission: string) => {
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.status, 403);
      assert.equal(typeof r.body.error, 'string');
      assert.match(r.body.message, new RegExp(permission));
    };
    /** The bytes of a file of the project, read through a signed download URL. */
    const bytesOf = async (file: string) => {
      const r = await srv.api('POST', '/api/v1/files/download-url', { file });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return Buffer.from(await (await fetch(r.body.url)).arrayBuffer()).toString('utf8');
    };

    it('replacing an object through POST /objects with its id needs content:write, as PUT does', async () => {
      const obj = (await srv.api('POST', '/api/v1/objects', { name: 'original', properties: { v: 1 } })).body;
      refused(
        await srv.api('POST', '/api/v1/objects', { id: obj.id, name: 'replaced by an executor' }, keys.executor),
        'content:write',
      );
      const after = (await srv.api('GET', `/api/v1/objects/${obj.id}`)).body;
      assert.equal(after.name, 'original');
      assert.deepEqual(after.properties, { v: 1 });
      const dev = await srv.api(
        'POST',
        '/api/v1/objects',
        { id: obj.id, name: 'replaced by a developer' },
        keys.developer,
      );
      assert.equal(dev.status, 200, JSON.stringify(dev.body));
      assert.equal((await srv.api('GET', `/api/v1/objects/${obj.id}`)).body.name, 'replaced by a developer');
    });

    it('an upload URL for an existing file needs content:write; for a new key content:create is enough', async () => {
      const file = await upload(srv, 'plain.txt', 'original bytes', { id: `roles/plain-${dialect}.txt` });
      for (const [path, body] of [
        ['/api/v1/files/upload-url', { name: 'plain.txt', id: file.path }],
        ['/api/v1/objects/upload-url', { name: 'plain.txt', id: file.id }],
        ['/api/v1/files/bulk-upload-urls', { files: [{ name: 'plain.txt', id: file.path }] }],
      ] as const)
        refused(await srv.api('POST', path, body, keys.executor), 'content:write');
      assert.equal(await bytesOf(file.id), 'original bytes');
      const fresh = await srv.api(
        'POST',
        '/api/v1/files/upload-url',
        { name: 'new.txt', id: `roles/new-${dialect}.txt` },
        keys.executor,
      );
      assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
      await upload(srv, 'plain.txt', 'developer bytes', { id: file.path, token: keys.developer });
      assert.equal(await bytesOf(file.id), 'developer bytes');
    });

    it('an object made from a file takes the file away from the files API only for a role with content:delete', async () => {
      const file = await upload(srv, 'adopt.txt', 'adopted bytes', {
        id: `roles/adopt-${dialect}.txt`,
        type: 'text/plain',
      });
      const content = { source: file.id, type: 'text/plain', name: 'adopt.txt' };
      const byExec = await srv.api(
        'POST',
        '/api/v1/objects',
        { name: 'from a file, by an executor', content },
        keys.executor,
      );
      assert.equal(byExec.status, 200, JSON.stringify(byExec.body));
      const bulk = await srv.api(
        'POST',
        '/api/v1/operations',
        { name: 'create', ids: [], params: { objects: [{ name: 'bulk from a file', content }] } },
        keys.executor,
      );
      assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
      assert.equal(bulk.body.created, 1, JSON.stringify(bulk.body));
      refused(await srv.api('DELETE', `/api/v1/files/${file.path}`, undefined, keys.executor), 'content:delete');
      // The file is where it was, with its bytes; the objects have their own copy.
      assert.equal((await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(file.id)}`)).status, 200);
      assert.equal(await bytesOf(file.id), 'adopted bytes');
      assert.notEqual(byExec.body.content.source, file.id);
      assert.equal(await bytesOf(byExec.body.content.source), 'adopted bytes');
      const byDev = await srv.api(
        'POST',
        '/api/v1/objects',
        { name: 'from a file, by a developer', content },
        keys.developer,
      );
      assert.equal(byDev.status, 200, JSON.stringify(byDev.body));
      assert.equal(
        (await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(file.id)}`)).status,
        404,
        'a developer may delete files: the object adopts it',
      );
      assert.equal(await bytesOf(byDev.body.content.source), 'adopted bytes');
    });

    it('a reader and an auditor read everything and execute nothing; only the auditor reads the audit trail permission', async () => {
      const { interaction } = await seedEcho(srv, { name: 'ReaderEcho' });
      for (const role of ['reader', 'auditor'] as const) {
        const c = srv.client(keys[role]);
        assert.ok(((await c.interactions.list()) as any[]).some((i) => i.id === interaction.id));
        assert.ok(Array.isArray(await c.runs.list({})));
        await assert.rejects(
          c.interactions.execute(interaction.id, { data: { text: 'x' } } as any),
          (err: any) => err.status === 403 && /interaction:execute/.test(err.message),
        );
        await assert.rejects(c.objects.create({ name: 'x' } as any), (err: any) => err.status === 403);
        const token = await srv.api('POST', '/api/v1/token/issue', undefined, keys[role]);
        assert.equal(token.status, 200, 'any key may exchange itself for a token');
        // The token carries the key's role.
        const viaJwt = await srv.api(
          'POST',
          '/api/v1/runs',
          { interaction: interaction.id, data: { text: 'x' } },
          token.body.token,
        );
        assert.equal(viaJwt.status, 403);
      }
      assert.ok(can('auditor', 'audit:read') && !can('reader', 'audit:read'));
    });

    it('a developer manages keys within its own role, never admin or auditor keys', async () => {
      const dev = keys.developer;
      for (const role of ['developer', 'executor', 'reader', 'member'] as const) {
        const r = await srv.api('POST', '/api/v1/apikeys', { name: `dev-made ${role}`, role }, dev);
        assert.equal(r.status, 200, `${role}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.role, role === 'member' ? 'developer' : role);
      }
      for (const role of ['admin', 'auditor'] as const) {
        const r = await srv.api('POST', '/api/v1/apikeys', { name: `dev-made ${role}`, role }, dev);
        assert.equal(r.status, 403, `${role}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, /cannot create a key of role/);
      }
      const exec = (await srv.api('POST', '/api/v1/apikeys', { name: 'to promote', role: 'executor' }, dev)).body;
      const promote = await srv.api('PUT', `/api/v1/apikeys/${exec.id}`, { role: 'auditor' }, dev);
      assert.equal(promote.status, 403);
      const ok = await srv.api('PUT', `/api/v1/apikeys/${exec.id}`, { role: 'reader' }, dev);
      assert.equal(ok.status, 200);
      assert.equal(ok.body.role, 'reader');
      const adminKeyId = (await srv.api('GET', '/api/v1/apikeys')).body.find((k: any) => k.role === 'admin').id;
      assert.equal((await srv.api('DELETE', `/api/v1/apikeys/${adminKeyId}`, undefined, dev)).status, 403);
      assert.equal((await srv.api('POST', '/api/v1/projects', { name: 'by a developer' }, dev)).status, 403);
      const bad = await srv.api('POST', '/api/v1/apikeys', { name: 'bad role', role: 'owner' });
      assert.equal(bad.status, 400);
    });
  });
}
