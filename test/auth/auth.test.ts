import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: authentication, projects and API keys`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('answers /health without a token', async () => {
      const r = await srv.api('GET', '/health', undefined, null);
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'ok');
    });

    it('refuses a missing, malformed or unknown token with 401 and the error shape', async () => {
      for (const [token, headers] of [
        [null, {}],
        ['sk-unknownunknownunknown1234', {}],
        ['not-a-token', {}],
        [null, { authorization: 'Basic abc' }],
      ] as const) {
        const r = await srv.api('GET', '/api/v1/projects', undefined, token, headers as Record<string, string>);
        assert.equal(r.status, 401);
        assert.equal(r.body.error, 'unauthorized');
        assert.equal(r.body.status, 401);
        assert.match(r.body.message, /token|key|Authorization/i);
      }
    });

    it('issues a real JWT for an API key, with an empty JSON body, and accepts it', async () => {
      const r = await srv.api('POST', '/api/v1/token/issue', '', srv.adminKey, { 'content-type': 'application/json' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.token_type, 'Bearer');
      assert.ok(r.body.expires_in > 0);
      const claims = decodeJwt(r.body.token);
      assert.ok(claims.exp! > Date.now() / 1000);
      assert.equal((claims.endpoints as any).studio, srv.url);
      assert.equal((claims.endpoints as any).token, `${srv.url}/api/v1`);
      // fromAuthToken falls back to `iss` as the token server URL: it must be one.
      assert.equal(claims.iss, `${srv.url}/api/v1`);
      assert.ok((claims.project as any).id);
      const me = await srv.api('GET', '/api/v1/projects', undefined, r.body.token);
      assert.equal(me.status, 200);
      // The Python client's body form.
      const py = await srv.api('POST', '/api/v1/token/issue', { type: 'apikey', key: srv.adminKey });
      assert.equal(py.status, 200);
      const tampered = r.body.token.slice(0, -3) + (r.body.token.endsWith('AAA') ? 'BBB' : 'AAA');
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, tampered)).status, 401);
    });

    it('does not exchange a JWT for a fresh one: a token comes from the key, so the TTL bounds a stolen token', async () => {
      const jwt = (await srv.api('POST', '/api/v1/token/issue', undefined, srv.adminKey)).body.token;
      for (const body of [undefined, {}, { project: srv.orrery.bootstrap.project.id }]) {
        const renewed = await srv.api('POST', '/api/v1/token/issue', body, jwt);
        assert.equal(renewed.status, 401, JSON.stringify(body));
        assert.deepEqual(Object.keys(renewed.body).sort(), ['error', 'message', 'status']);
        assert.equal(renewed.body.error, 'unauthorized');
        assert.match(renewed.body.message, /API key/);
      }
      // The key itself still works, as a bearer or in the body.
      assert.equal(
        (await srv.api('POST', '/api/v1/token/issue', { type: 'apikey', key: srv.adminKey }, jwt)).status,
        200,
      );
      assert.equal((await srv.api('POST', '/api/v1/token/issue', undefined, srv.adminKey)).status, 200);
    });

    it('creates projects and keys; a member key sees only its project; others are 404', async () => {
      const proj = await srv.api('POST', '/api/v1/projects', { name: 'Second Project' });
      assert.equal(proj.status, 200, JSON.stringify(proj.body));
      assert.equal(proj.body.namespace, 'second-project');
      const dup = await srv.api('POST', '/api/v1/projects', { name: 'Second Project' });
      assert.equal(dup.status, 400);

      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'second member', project: proj.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      assert.match(key.body.value, /^sk-/);
      assert.equal(key.body.role, 'developer', 'the default role (member before roles existed)');
      assert.deepEqual(key.body.project, { id: proj.body.id, name: 'Second Project' });

      const listed = await srv.api('GET', '/api/v1/apikeys');
      assert.equal(listed.status, 200);
      assert.ok(listed.body.some((k: any) => k.id === key.body.id));
      assert.ok(
        listed.body.every((k: any) => k.value === undefined),
        'GET /apikeys never shows the secret',
      );

      const member = key.body.value;
      const visible = await srv.api('GET', '/api/v1/projects', undefined, member);
      assert.deepEqual(
        visible.body.map((p: any) => p.id),
        [proj.body.id],
      );
      assert.equal((await srv.api('POST', '/api/v1/projects', { name: 'x' }, member)).status, 403);
      assert.equal((await srv.api('POST', '/api/v1/apikeys', { name: 'x', role: 'admin' }, member)).status, 403);

      // Data of the default project is invisible to the member of the second one.
      const seeded = await seedEcho(srv);
      const other = await srv.api('GET', `/api/v1/interactions/${seeded.interaction.id}`, undefined, member);
      assert.equal(other.status, 404);
      assert.equal(other.body.error, 'not_found');
      assert.equal((await srv.api('GET', `/api/v1/environments/${seeded.env.id}`, undefined, member)).status, 404);
      assert.equal(
        (await srv.api('GET', `/api/v1/projects/${srv.orrery.bootstrap.project.id}`, undefined, member)).status,
        404,
      );
      const run = await srv.api('POST', '/api/v1/runs', { interaction: seeded.interaction.id, data: { text: 'hi' } });
      assert.equal((await srv.api('GET', `/api/v1/runs/${run.body.id}`, undefined, member)).status, 404);
      const runs = await srv.api('GET', '/api/v1/runs', undefined, member);
      assert.deepEqual(runs.body, []);

      // Revoking the key stops it at once, and the JWTs issued for it too.
      const jwt = (await srv.api('POST', '/api/v1/token/issue', undefined, member)).body.token;
      assert.equal((await srv.api('DELETE', `/api/v1/apikeys/${key.body.id}`)).status, 200);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, member)).status, 401);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 401);
      assert.equal((await srv.api('DELETE', `/api/v1/apikeys/${key.body.id}`)).status, 404);
    });

    it('issues an admin key a token for another project of its account (the console switches project so); not other roles', async () => {
      const other = await srv.api('POST', '/api/v1/projects', { name: 'Switch target' });
      assert.equal(other.status, 200, JSON.stringify(other.body));
      const issued = await srv.api('POST', '/api/v1/token/issue', { project: other.body.id }, srv.adminKey);
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      assert.equal((decodeJwt(issued.body.token).project as any).id, other.body.id);
      // The token acts in that project: what it creates lives there, not in the key's own project.
      const env = await srv.api(
        'POST',
        '/api/v1/environments',
        { name: 'switched env', provider: 'test', default_model: 'echo' },
        issued.body.token,
      );
      assert.equal(env.status, 200, JSON.stringify(env.body));
      assert.ok(
        ((await srv.api('GET', '/api/v1/environments', undefined, issued.body.token)).body as any[]).some(
          (e) => e.id === env.body.id,
        ),
      );
      assert.ok(!((await srv.api('GET', '/api/v1/environments')).body as any[]).some((e) => e.id === env.body.id));
      // Nor can it delete the project its key lives in (that would delete the key).
      const home = decodeJwt((await srv.api('POST', '/api/v1/token/issue', {}, srv.adminKey)).body.token)
        .project as any;
      assert.equal((await srv.api('DELETE', `/api/v1/projects/${home.id}`, undefined, issued.body.token)).status, 409);
      // An unknown project is 404; a non-admin key may not switch (403), and a forged claim fails.
      assert.equal((await srv.api('POST', '/api/v1/token/issue', { project: 'nope' }, srv.adminKey)).status, 404);
      const dev = await srv.api('POST', '/api/v1/apikeys', { name: 'dev', role: 'developer' });
      assert.equal(dev.status, 200, JSON.stringify(dev.body));
      const refused = await srv.api('POST', '/api/v1/token/issue', { project: other.body.id }, dev.body.value);
      assert.equal(refused.status, 403);
      assert.match(refused.body.message, /admin/);
      // Deleting the target project ends the tokens issued for it.
      const third = await srv.api('POST', '/api/v1/projects', { name: 'Short-lived' });
      const t3 = (await srv.api('POST', '/api/v1/token/issue', { project: third.body.id }, srv.adminKey)).body.token;
      assert.equal((await srv.api('GET', '/api/v1/environments', undefined, t3)).status, 200);
      assert.equal((await srv.api('DELETE', `/api/v1/projects/${third.body.id}`)).status, 200);
      assert.equal((await srv.api('GET', '/api/v1/environments', undefined, t3)).status, 401);
    });

    it('validates key creation', async () => {
      assert.equal((await srv.api('POST', '/api/v1/apikeys', {})).status, 400);
      assert.equal((await srv.api('POST', '/api/v1/apikeys', { name: 'x', role: 'owner' })).status, 400);
      assert.equal((await srv.api('POST', '/api/v1/apikeys', { name: 'x', project: 'nope' })).status, 404);
      const past = await srv.api('POST', '/api/v1/apikeys', { name: 'x', expires_at: '2001-01-01T00:00:00Z' });
      assert.equal(past.status, 400);
      assert.match(past.body.message, /future/);
    });

    it('exchanges an sk- key through the official client', async () => {
      const client = srv.client();
      const envs = await client.environments.list();
      assert.ok(Array.isArray(envs));
      const project = await client.getProject();
      assert.equal(project?.id, srv.orrery.bootstrap.project.id);
    });
  });
}
