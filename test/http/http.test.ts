import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: HTTP plumbing and the OpenAPI document`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('serves an OpenAPI 3.1 document covering every API route', async () => {
      const r = await srv.api('GET', '/api/v1/openapi.json', undefined, null);
      assert.equal(r.status, 200);
      assert.match(r.body.openapi, /^3\.1/);
      const base = new URL(r.body.servers[0].url).pathname.replace(/\/$/, '');
      assert.equal(base, '/api/v1');
      const documented = new Set<string>();
      for (const [path, ops] of Object.entries<Record<string, unknown>>(r.body.paths)) {
        // `{*}` is a wildcard route's rest of the path (DELETE /files/*).
        for (const method of Object.keys(ops))
          documented.add(`${method.toUpperCase()} ${base}${path.replace(/\{\*\}$/, '*').replace(/\{(\w+)\}/g, ':$1')}`);
      }
      for (const expected of [
        'POST /api/v1/token/issue',
        'GET /api/v1/projects',
        'POST /api/v1/projects',
        'GET /api/v1/apikeys',
        'POST /api/v1/apikeys',
        'DELETE /api/v1/apikeys/:id',
        'POST /api/v1/environments',
        'GET /api/v1/environments',
        'GET /api/v1/environments/:id',
        'PUT /api/v1/environments/:id',
        'DELETE /api/v1/environments/:id',
        'POST /api/v1/prompts',
        'GET /api/v1/prompts/:id',
        'DELETE /api/v1/prompts/:id',
        'POST /api/v1/interactions',
        'GET /api/v1/interactions',
        'GET /api/v1/interactions/:id',
        'PUT /api/v1/interactions/:id',
        'DELETE /api/v1/interactions/:id',
        'POST /api/v1/interactions/:id/publish',
        'POST /api/v1/runs',
        'GET /api/v1/runs',
        'GET /api/v1/runs/:id',
        'GET /api/v1/runs/:id/stream',
        'POST /api/v1/execute',
      ]) {
        assert.ok(documented.has(expected), `${expected} is documented`);
      }
      for (const route of srv.orrery.routes) assert.ok(documented.has(route), `${route} is in the OpenAPI document`);
      assert.ok(srv.orrery.routes.length >= 25);
      assert.ok(r.body.components.schemas.Error, 'the error shape is a named component');
    });

    it('answers unknown routes, malformed JSON and oversized bodies with the JSON error shape', async () => {
      const unknown = await srv.api('GET', '/api/v1/nothing-here');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error, 'not_found');
      const malformed = await srv.api('POST', '/api/v1/prompts', '{not json');
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.error, 'bad_request');
      assert.match(malformed.body.message, /malformed JSON/);
      const huge = await srv.api(
        'POST',
        '/api/v1/prompts',
        JSON.stringify({ name: 'x', content: 'a'.repeat(17 * 1024 * 1024) }),
      );
      assert.equal(huge.status, 413);
      assert.equal(huge.body.status, 413);
      const wrongType = await srv.api('POST', '/api/v1/prompts', 'name=x', srv.adminKey, {
        'content-type': 'application/x-www-form-urlencoded',
      });
      assert.equal(wrongType.status, 415);
      assert.equal(typeof wrongType.body.message, 'string');
      const emptyBody = await srv.api('POST', '/api/v1/runs', '', srv.adminKey, { 'content-type': 'application/json' });
      assert.equal(emptyBody.status, 400);
      assert.equal(emptyBody.body.error, 'bad_request');
    });

    it('ignores the x-api-version header and unknown body fields', async () => {
      const r = await srv.api(
        'POST',
        '/api/v1/environments',
        { name: 'e', provider: 'test', surprise: true },
        srv.adminKey,
        { 'x-api-version': '20260803' },
      );
      assert.equal(r.status, 200);
    });
  });
}
