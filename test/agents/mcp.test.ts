import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.ts';

const CITY_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

async function seed(srv: TestServer, name: string, model: string, content: string, extra = {}, token?: string) {
  const env = await srv.api(
    'POST',
    '/api/v1/environments',
    { name: `env-${name}`, provider: 'test', default_model: model },
    token,
  );
  assert.equal(env.status, 200, JSON.stringify(env.body));
  const ix = await srv.api(
    'POST',
    '/api/v1/interactions',
    {
      name,
      status: 'draft',
      environment: env.body.id,
      prompts: [{ type: 'template', template: { role: 'user', content, content_type: 'handlebars' } }],
      ...extra,
    },
    token,
  );
  assert.equal(ix.status, 200, JSON.stringify(ix.body));
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: remote MCP servers and agents that call them`, () => {
    let srv: TestServer;
    let mcp: TestMcpServer;
    before(async () => {
      srv = await startTestServer(dialect);
      mcp = await startMcpServer();
      await seed(srv, 'Planner', 'tools', 'Plan a trip to {{city}}');
      await seed(srv, 'Weather', 'echo', 'Weather in {{city}}', { interaction_schema: CITY_SCHEMA });
    });
    after(async () => {
      await srv.close();
      await mcp.close();
    });

    const ended = async (id: string) => {
      for (;;) {
        const run = (await srv.api('GET', `/api/v1/runs/${id}`)).body;
        if (run.status === 'completed' || run.status === 'failed') return run;
        await sleep(50);
      }
    };

    it('creates, lists, retrieves, updates and deletes a server; its headers are encrypted at rest and never answered', async () => {
      const created = await srv.api('POST', '/api/v1/mcp-servers', {
        name: 'crud',
        url: mcp.url,
        headers: { 'x-api-key': 'crud-secret-value' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.deepEqual(created.body.headers, ['x-api-key']);
      assert.ok(!JSON.stringify(created.body).includes('crud-secret-value'));
      const id = created.body.id;
      const listed = await srv.api('GET', '/api/v1/mcp-servers');
      assert.ok(listed.body.some((s: { id: string }) => s.id === id));
      assert.ok(!JSON.stringify(listed.body).includes('crud-secret-value'));
      assert.equal((await srv.api('GET', `/api/v1/mcp-servers/${id}`)).body.name, 'crud');
      const stored = await srv.orrery.database.db
        .selectFrom('mcp_servers')
        .select(['headers_enc'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.ok(stored.headers_enc && !stored.headers_enc.includes('crud-secret'), 'sealed, not in clear');
      const renamed = await srv.api('PUT', `/api/v1/mcp-servers/${id}`, { name: 'crud2', headers: null });
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      assert.equal(renamed.body.name, 'crud2');
      assert.deepEqual(renamed.body.headers, []);
      assert.equal((await srv.api('DELETE', `/api/v1/mcp-servers/${id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/mcp-servers/${id}`)).status, 404);
    });

    it('refuses bad servers with a message that says what to fix', async () => {
      const ok = await srv.api('POST', '/api/v1/mcp-servers', { name: 'taken', url: mcp.url });
      assert.equal(ok.status, 200);
      const cases: Array<[Record<string, unknown>, number, RegExp]> = [
        [{ name: 'has_underscore', url: mcp.url }, 400, /letters, digits or -/],
        [{ name: 'ftp', url: 'ftp://example.com/mcp' }, 400, /http or https/],
        [{ name: 'creds', url: 'http://user:pw@127.0.0.1:1/mcp' }, 400, /credentials/],
        [{ name: 'meta', url: 'http://169.254.169.254/mcp' }, 400, /egress/],
        [{ name: 'hdr', url: mcp.url, headers: { 'mcp-session-id': 'x' } }, 400, /set by the MCP transport/],
        [{ name: 'hdr2', url: mcp.url, headers: { 'bad header': 'x' } }, 400, /not a header name/],
        [{ name: 'taken', url: mcp.url }, 409, /exists/],
        [{ name: 'extra', url: mcp.url, oauth: true }, 400, /oauth|additional/i],
      ];
      for (const [body, status, message] of cases) {
        const r = await srv.api('POST', '/api/v1/mcp-servers', body);
        assert.equal(r.status, status, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message, JSON.stringify(body));
      }
    });

    it('an agent with an interaction tool and an MCP tool completes through the official client; the headers and the idempotency key reach the server', async () => {
      const server = await srv.api('POST', '/api/v1/mcp-servers', {
        name: 'weather',
        url: mcp.url,
        headers: { 'x-api-key': 'mcp-secret-1' },
      });
      assert.equal(server.status, 200, JSON.stringify(server.body));
      const { runId } = await srv.client().interactions.executeAsync({
        type: 'conversation',
        interaction: 'Planner',
        data: { city: 'Paris' },
        tool_names: ['Weather', 'weather_forecast'],
      } as never);
      const run = await ended(runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const text: string = run.result.map((r: { value: string }) => r.value).join('');
      assert.match(text, /^Weather: Weather in /m);
      assert.match(text, /^weather_forecast: Sunny in /m);
      const call = mcp.calls.at(-1)!;
      assert.equal(call.name, 'forecast');
      assert.match(String((call.meta as Record<string, unknown>)['orrery/idempotency_key']), new RegExp(`^${runId}:`));
      assert.ok(mcp.requests.some((h) => h['x-api-key'] === 'mcp-secret-1'));
    });

    it('naming the server alone gives all its tools; an unknown MCP tool is refused', async () => {
      const all = await srv.api('POST', '/api/v1/execute/async', {
        type: 'conversation',
        interaction: 'Planner',
        data: { city: 'Oslo' },
        tool_names: ['weather'],
      });
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const run = await ended(all.body.runId);
      assert.match(run.result.map((r: { value: string }) => r.value).join(''), /^weather_forecast: Sunny in /m);
      const bad = await srv.api('POST', '/api/v1/execute/async', {
        type: 'conversation',
        interaction: 'Planner',
        tool_names: ['weather_nope'],
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /has no tool nope/);
    });

    it("another project's MCP server is not reachable: not readable, not usable as a tool", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: `mcp-other-${dialect}` });
      const key = (await srv.api('POST', '/api/v1/apikeys', { name: 'o', project: project.body.id })).body.value;
      const mine = (await srv.api('GET', '/api/v1/mcp-servers')).body.find(
        (s: { name: string }) => s.name === 'weather',
      );
      assert.equal((await srv.api('GET', `/api/v1/mcp-servers/${mine.id}`, undefined, key)).status, 404);
      assert.equal((await srv.api('PUT', `/api/v1/mcp-servers/${mine.id}`, { name: 'x' }, key)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/mcp-servers/${mine.id}`, undefined, key)).status, 404);
      assert.deepEqual((await srv.api('GET', '/api/v1/mcp-servers', undefined, key)).body, []);
      await seed(srv, 'Planner', 'tools', 'Plan {{city}}', {}, key);
      const r = await srv.api(
        'POST',
        '/api/v1/execute/async',
        { type: 'conversation', interaction: 'Planner', tool_names: ['weather_forecast'] },
        key,
      );
      assert.equal(r.status, 400);
      assert.match(r.body.message, /no tool "weather_forecast"/);
    });
  });
}
