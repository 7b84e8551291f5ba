/**
 * The MCP door at /mcp, driven by the MCP SDK's own client (Client + StreamableHTTPClientTransport,
 * unmodified) against a real Orrery: published interactions as tools (drafts never), a call as a
 * run found through GET /runs, the built-in content and run tools, the resources, roles, another
 * project's data out of reach, and the bad paths in MCP's shapes.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject, processed } from '../objects/helpers.ts';
import { createObject, makePng } from '../content/helpers.ts';
import { can } from '../../src/auth/permissions.ts';
import { KEY_ROLES } from '../../src/auth/principal.ts';
import { waitForEmbeddings } from '../embeddings/helpers.ts';

const TEXT = 'The lighthouse keeper logs the orbit of each passing comet in a brass ledger.';

/** The SDK's client, connected to /mcp with `key` as its bearer token. */
async function connect(srv: TestServer, key: string): Promise<Client> {
  const client = new Client({ name: 'orrery-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

const textOf = (r: any): string =>
  ((r.content ?? []) as Array<{ type: string; text?: string }>)
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

/** A JSON-RPC call made by hand (the bad paths the SDK's client would never send). */
async function rpc(srv: TestServer, body: unknown, key: string | null, headers: Record<string, string> = {}) {
  const res = await fetch(`${srv.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the MCP door`, () => {
    let srv: TestServer;
    let mcp: Client;
    let published: { id: string; draft: string };
    let objectId: string;
    let imageId: string;

    before(async () => {
      srv = await startTestServer(dialect);
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'offline',
        provider: 'test',
        default_model: 'echo',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const prompt = await srv.api('POST', '/api/v1/prompts', {
        name: 'say',
        role: 'user',
        content: 'Say: {{text}}',
        content_type: 'handlebars',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      });
      assert.equal(prompt.status, 200, JSON.stringify(prompt.body));
      const draft = await srv.api('POST', '/api/v1/interactions', {
        name: 'Echo Tool',
        description: 'Says the text back',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
        interaction_schema: {
          type: 'object',
          properties: { text: { type: 'string', maxLength: 200 } },
          required: ['text'],
          additionalProperties: false,
        },
      });
      assert.equal(draft.status, 200, JSON.stringify(draft.body));
      const version = await srv.api('POST', `/api/v1/interactions/${draft.body.id}/publish`, {});
      assert.equal(version.status, 200, JSON.stringify(version.body));
      published = { id: version.body.id, draft: draft.body.id };
      // A draft that is never published, and one whose input schema comes from its prompt alone.
      const drafty = await srv.api('POST', '/api/v1/interactions', {
        name: 'Only Draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.equal(drafty.status, 200);
      const merged = await srv.api('POST', '/api/v1/interactions', {
        name: 'From Prompt',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.equal((await srv.api('POST', `/api/v1/interactions/${merged.body.id}/publish`, {})).status, 200);

      const obj = await srv.api('POST', '/api/v1/objects', { name: 'ledger.txt', text: TEXT });
      assert.equal(obj.status, 200, JSON.stringify(obj.body));
      objectId = obj.body.id;
      await waitForEmbeddings(srv, 1);
      imageId = await createObject(srv, 'wide.png', await makePng(1200, 800));
      await processed(srv, imageId);

      mcp = await connect(srv, srv.adminKey);
    });
    after(async () => {
      await mcp?.close();
      await srv.close();
    });

    it('lists the published interactions as tools, with their merged input schema; drafts are not listed', async () => {
      const { tools } = await mcp.listTools();
      const names = tools.map((t) => t.name);
      for (const builtIn of ['search_objects', 'similar_objects', 'read_object', 'search_runs', 'read_run'])
        assert.ok(names.includes(builtIn), `${builtIn} in ${names.join(', ')}`);
      const echo = tools.find((t) => t.name === 'EchoTool');
      assert.ok(echo, `EchoTool in ${names.join(', ')}`);
      assert.equal(echo.description, 'Says the text back');
      assert.deepEqual(echo.inputSchema, {
        type: 'object',
        properties: { text: { type: 'string', maxLength: 200 } },
        required: ['text'],
        additionalProperties: false,
      });
      assert.equal((echo._meta as any)['orrery/interaction'].id, published.id);
      // Without an input schema of its own: its prompt's.
      const fromPrompt = tools.find((t) => t.name === 'FromPrompt');
      assert.deepEqual(fromPrompt?.inputSchema, {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      });
      assert.ok(!names.includes('OnlyDraft'), 'a draft is not a tool');
    });

    it('a call runs the published version: its result as MCP content, the run found through GET /runs with source mcp', async () => {
      const answer = await mcp.callTool({ name: 'EchoTool', arguments: { text: 'over the MCP door' } });
      assert.ok(!answer.isError, JSON.stringify(answer));
      assert.match(textOf(answer), /Say: over the MCP door/);
      const runId = (answer._meta as any)['orrery/run'];
      const link = (answer.content as any[]).find((c) => c.type === 'resource_link');
      assert.equal(link.uri, `orrery://runs/${runId}`);
      const list = await srv.api('GET', '/api/v1/runs?limit=100');
      const ref = list.body.find((r: { id: string }) => r.id === runId);
      assert.ok(ref, 'the call is listed');
      assert.equal(ref.interaction.id, published.id, 'the published version ran, not the draft');
      assert.equal(ref.source.type, 'mcp');
      const run = await srv.api('GET', `/api/v1/runs/${runId}`);
      assert.equal(run.body.status, 'completed');
      assert.deepEqual(run.body.parameters, { text: 'over the MCP door' });

      // The run as a resource, and through read_run and search_runs.
      const resource = await mcp.readResource({ uri: `orrery://runs/${runId}` });
      assert.equal(resource.contents[0].mimeType, 'application/json');
      const asJson = JSON.parse((resource.contents[0] as { text: string }).text);
      assert.equal(asJson.id, runId);
      assert.equal(asJson.source.type, 'mcp');
      const read = await mcp.callTool({ name: 'read_run', arguments: { id: runId } });
      assert.equal(JSON.parse(textOf(read)).id, runId);
      const found = await mcp.callTool({ name: 'search_runs', arguments: { interaction: published.id, limit: 5 } });
      assert.ok(!found.isError, JSON.stringify(found));
      const results = (found.structuredContent as any).results;
      assert.ok(results.some((r: { id: string; source: string }) => r.id === runId && r.source === 'mcp'));
    });

    it('searches and reads content objects: full text, similarity, text; objects as resources with renditions as images', async () => {
      const found = await mcp.callTool({ name: 'search_objects', arguments: { query: 'lighthouse comet' } });
      assert.ok(!found.isError, JSON.stringify(found));
      const hits = (found.structuredContent as any).results;
      assert.equal(hits[0].id, objectId);
      assert.equal(hits[0].uri, `orrery://objects/${objectId}`);
      assert.ok((found.content as any[]).some((c) => c.type === 'resource_link' && c.uri === hits[0].uri));
      const none = await mcp.callTool({ name: 'search_objects', arguments: { query: 'xylophonezebra' } });
      assert.deepEqual((none.structuredContent as any).results, []);

      const similar = await mcp.callTool({ name: 'similar_objects', arguments: { text: TEXT, limit: 3 } });
      assert.ok(!similar.isError, JSON.stringify(similar));
      assert.equal((similar.structuredContent as any).results[0].id, objectId);

      const read = await mcp.callTool({ name: 'read_object', arguments: { id: objectId } });
      assert.ok(textOf(read).includes(TEXT));
      const part = await mcp.callTool({ name: 'read_object', arguments: { id: objectId, offset: 4, max_chars: 10 } });
      assert.equal((part.content as any[])[1].text, TEXT.slice(4, 14));
      assert.match(
        (part.content as any[])[0].text,
        new RegExp(`characters 4 to 14 of ${TEXT.length}; call again with offset 14`),
      );

      const resource = await mcp.readResource({ uri: `orrery://objects/${objectId}` });
      assert.deepEqual(resource.contents, [
        { uri: `orrery://objects/${objectId}`, mimeType: 'text/plain', text: TEXT },
      ]);
      const image = await mcp.readResource({ uri: `orrery://objects/${imageId}` });
      const blobs = image.contents.filter((c) => 'blob' in c) as Array<{ uri: string; mimeType: string; blob: string }>;
      assert.equal(blobs.length, 2, 'the web rendition and the thumbnail');
      for (const b of blobs) {
        assert.equal(b.mimeType, 'image/jpeg');
        assert.deepEqual([...Buffer.from(b.blob, 'base64').subarray(0, 3)], [0xff, 0xd8, 0xff], 'JPEG bytes');
        // Each rendition's URI reads as its image alone.
        const again = await mcp.readResource({ uri: b.uri });
        assert.equal((again.contents[0] as { blob: string }).blob, b.blob);
      }
      const { resources } = await mcp.listResources();
      assert.ok(resources.some((r) => r.uri === `orrery://objects/${objectId}` && r.name === 'ledger.txt'));
      const { resourceTemplates } = await mcp.listResourceTemplates();
      assert.deepEqual(
        resourceTemplates.map((t) => t.uriTemplate),
        ['orrery://objects/{id}', 'orrery://runs/{id}'],
      );
    });

    it('bad input in MCP shapes: JSON-RPC errors for unknown tools and resources, isError results for bad arguments', async () => {
      await assert.rejects(
        mcp.callTool({ name: 'no_such_tool', arguments: {} }),
        (err: unknown) =>
          err instanceof McpError && err.code === -32602 && /unknown tool "no_such_tool"/.test(err.message),
      );
      await assert.rejects(
        mcp.callTool({ name: 'OnlyDraft', arguments: { text: 'x' } }),
        (err: unknown) => err instanceof McpError && err.code === -32602,
        'a draft cannot be called',
      );
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['search_objects', {}, /query is required/],
        ['search_objects', { query: 'x', limit: 500 }, /limit must be a whole number from 1 to 50/],
        ['search_objects', { query: 'x', colour: 'red' }, /unknown argument "colour"/],
        ['search_objects', { query: 'x'.repeat(1001) }, /query has 1001 characters; at most 1000/],
        ['similar_objects', { text: 'a', object_id: 'b' }, /exactly one of text/],
        ['read_object', { id: 'no-such-object' }, /object "no-such-object" was not found/],
        ['read_object', { id: objectId, offset: 100_000 }, /past the end of the text/],
        ['read_run', { id: 'no-such-run' }, /run "no-such-run" was not found/],
        ['search_runs', { status: 'sleeping' }, /status must be one of created, processing, completed, failed/],
        ['search_runs', { query: 'status:(' }, /column \d+|position|expected/i],
        ['EchoTool', { text: 7 }, /does not match the input schema/],
        ['EchoTool', { text: 'x', extra: true }, /does not match the input schema/],
      ];
      for (const [name, args, message] of cases) {
        const r = await mcp.callTool({ name, arguments: args });
        assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
        assert.match(textOf(r), message, name);
      }
      // A run that fails at its provider: a tool error naming it; the run is stored, failed.
      const broken = await srv.api('POST', '/api/v1/interactions', {
        name: 'Broken',
        environment: (await srv.api('GET', '/api/v1/environments')).body.find((e: any) => e.name === 'offline').id,
        model: 'error',
        prompts: [{ type: 'template', template: (await srv.api('GET', '/api/v1/prompts')).body[0].id }],
      });
      assert.equal(broken.status, 200, JSON.stringify(broken.body));
      assert.equal((await srv.api('POST', `/api/v1/interactions/${broken.body.id}/publish`, {})).status, 200);
      const failed = await mcp.callTool({ name: 'Broken', arguments: { text: 'fail' } });
      assert.equal(failed.isError, true, JSON.stringify(failed));
      const runId = /run (\w+)/.exec(textOf(failed))?.[1];
      assert.ok(runId, `the error names the run: ${textOf(failed)}`);
      const run = await srv.api('GET', `/api/v1/runs/${runId}`);
      assert.equal(run.body.status, 'failed');
      assert.equal(run.body.source.type, 'mcp');
      await assert.rejects(
        mcp.readResource({ uri: 'https://example.com/x' }),
        (err: unknown) =>
          err instanceof McpError && err.code === -32602 && /orrery:\/\/objects\/<id>/.test(err.message),
      );
      await assert.rejects(
        mcp.readResource({ uri: 'orrery://objects/no-such-object' }),
        (err: unknown) => err instanceof McpError && err.code === -32002 && /not found/.test(err.message),
      );
      await assert.rejects(
        mcp.listTools({ cursor: 'bogus' }),
        (err: unknown) => err instanceof McpError && err.code === -32602 && /cursor/.test(err.message),
      );
    });

    it('bad requests at the HTTP level answer with JSON-RPC error bodies', async () => {
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      };
      const doc = (await srv.api('GET', '/api/v1/openapi.json')).body;
      assert.deepEqual(Object.keys(doc.paths['/mcp']).sort(), ['delete', 'get', 'post']);
      assert.deepEqual(
        doc.paths['/mcp'].post.servers.map((s: { url: string }) => s.url),
        ['/'],
      );
      const ok = await rpc(srv, init, srv.adminKey);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.result.serverInfo.name, 'orrery');

      const anonymous = await rpc(srv, init, null);
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.jsonrpc, '2.0');
      assert.equal(anonymous.body.error.code, -32000);
      assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);
      const wrong = await rpc(srv, init, 'sk-not-a-key');
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.error.code, -32000);

      const malformed = await rpc(srv, '{"jsonrpc": "2.0", "id": 1, "method": ', srv.adminKey);
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.error.code, -32700);
      const notRpc = await rpc(srv, { hello: 'world' }, srv.adminKey);
      assert.equal(notRpc.status, 400);
      assert.equal(notRpc.body.error.code, -32600);
      assert.match(notRpc.body.error.message, /jsonrpc/);
      const tooLarge = await rpc(
        srv,
        { ...init, params: { ...init.params, padding: 'x'.repeat(5 * 1024 * 1024) } },
        srv.adminKey,
      );
      assert.equal(tooLarge.status, 413);
      assert.match(tooLarge.body.error.message, /4194304 bytes/);
      const text = await fetch(`${srv.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', authorization: `Bearer ${srv.adminKey}` },
        body: 'hello',
      });
      assert.equal(text.status, 415);
      assert.equal(((await text.json()) as any).jsonrpc, '2.0');
      const get = await fetch(`${srv.url}/mcp`, { headers: { accept: 'text/event-stream' } });
      assert.equal(get.status, 405);
      assert.equal(get.headers.get('allow'), 'POST');
      assert.equal(((await get.json()) as any).error.code, -32000);
      const unknownMethod = await rpc(srv, { jsonrpc: '2.0', id: 2, method: 'prompts/get', params: {} }, srv.adminKey, {
        'mcp-protocol-version': '2025-06-18',
      });
      assert.equal(unknownMethod.body.error.code, -32601);

      // Hostile input: a batch over its bound, a name of 10,000 characters, arguments that are not
      // an object, a URI with a control character, a prototype key.
      const proto = { 'mcp-protocol-version': '2025-06-18' };
      const call = (id: number, params: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params });
      const batch = await rpc(
        srv,
        Array.from({ length: 101 }, (_, i) => call(i, { name: 'search_runs' })),
        srv.adminKey,
        proto,
      );
      assert.equal(batch.status, 400);
      assert.equal(batch.body.error.code, -32600);
      const longName = await rpc(srv, call(3, { name: 'x'.repeat(10_000), arguments: {} }), srv.adminKey, proto);
      assert.equal(longName.body.error.code, -32602);
      assert.ok(longName.body.error.message.length < 400, 'the name is not echoed whole');
      const arrayArgs = await rpc(srv, call(4, { name: 'EchoTool', arguments: ['x'] }), srv.adminKey, proto);
      assert.equal(arrayArgs.status, 200);
      assert.ok(arrayArgs.body.error || arrayArgs.body.result.isError, JSON.stringify(arrayArgs.body));
      const control = await rpc(
        srv,
        { jsonrpc: '2.0', id: 5, method: 'resources/read', params: { uri: 'orrery://objects/%00' } },
        srv.adminKey,
        proto,
      );
      assert.equal(control.body.error.code, -32602);
      const prototype = await rpc(
        srv,
        '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_runs","arguments":{"__proto__":{"x":1}}}}',
        srv.adminKey,
        proto,
      );
      assert.equal(prototype.status, 400);
      assert.equal(prototype.body.error.code, -32700);
    });

    it('roles apply: every role lists and reads; only a role with interaction:execute runs an interaction', async () => {
      for (const role of KEY_ROLES) {
        const k = await srv.api('POST', '/api/v1/apikeys', { name: `mcp ${role}`, role });
        assert.equal(k.status, 200, JSON.stringify(k.body));
        const client = await connect(srv, k.body.value);
        try {
          const names = (await client.listTools()).tools.map((t) => t.name);
          assert.ok(names.includes('search_objects') && names.includes('search_runs'), role);
          const read = await client.callTool({ name: 'read_object', arguments: { id: objectId } });
          assert.ok(textOf(read).includes(TEXT), role);
          const before = (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length;
          const ran = await client.callTool({ name: 'EchoTool', arguments: { text: `as ${role}` } });
          const after = (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length;
          if (can(role, 'interaction:execute')) {
            assert.ok(names.includes('EchoTool'), role);
            assert.ok(!ran.isError, `${role}: ${JSON.stringify(ran)}`);
            assert.match(textOf(ran), new RegExp(`as ${role}`));
            assert.equal(after, before + 1, `${role}: one run`);
          } else {
            assert.ok(!names.includes('EchoTool'), `${role} is not offered what it cannot run`);
            assert.equal(ran.isError, true, role);
            assert.match(
              textOf(ran),
              new RegExp(`role \\(${role}\\) does not have the permission interaction:execute`),
            );
            assert.equal(after, before, `${role}: no run was made`);
          }
        } finally {
          await client.close();
        }
      }
    });

    it('limits apply: a 429 with Retry-After in JSON-RPC shape; past its tokens, a key runs no model but still reads', async () => {
      const key = async (name: string, limits: Record<string, number>) => {
        const k = await srv.api('POST', '/api/v1/apikeys', { name, limits });
        assert.equal(k.status, 200, JSON.stringify(k.body));
        return k.body.value as string;
      };
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
      const proto = { 'mcp-protocol-version': '2025-06-18' };
      const twice = await key('two a minute', { requests_per_minute: 2 });
      assert.equal((await rpc(srv, list, twice, proto)).status, 200);
      assert.equal((await rpc(srv, list, twice, proto)).status, 200);
      const third = await rpc(srv, list, twice, proto);
      assert.equal(third.status, 429);
      assert.equal(third.body.jsonrpc, '2.0');
      assert.equal(third.body.error.code, -32000);
      assert.ok(Number(third.headers.get('retry-after')) > 0);

      const thrifty = await key('one token a minute', { tokens_per_minute: 1 });
      const call = (name: string, args: unknown) => ({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name, arguments: args },
      });
      const first = await rpc(srv, call('EchoTool', { text: 'spend the tokens' }), thrifty, proto);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.ok(!first.body.result.isError, JSON.stringify(first.body));
      let refused: Awaited<ReturnType<typeof rpc>> | undefined;
      // The run's tokens are counted once it has ended: a few calls may pass before the count lands.
      for (let i = 0; i < 20 && !refused; i++) {
        const r = await rpc(srv, call('EchoTool', { text: 'once more' }), thrifty, proto);
        if (r.status === 429) refused = r;
      }
      assert.ok(refused, 'a call that runs a model is refused past the tokens of the minute');
      assert.match(refused.body.error.message, /token/);
      const read = await rpc(srv, call('read_object', { id: objectId }), thrifty, proto);
      assert.equal(read.status, 200, 'reading runs no model: not refused');
      assert.ok(!read.body.result.isError);
    });

    it("another project's interactions, objects and runs are out of reach", async () => {
      const mine = await mcp.callTool({ name: 'EchoTool', arguments: { text: 'mine' } });
      const runId = (mine._meta as any)['orrery/run'];
      const other = await secondProject(srv);
      const theirs = await connect(srv, other.key);
      try {
        const { tools } = await theirs.listTools();
        assert.ok(!tools.some((t) => t.name === 'EchoTool'));
        await assert.rejects(
          theirs.callTool({ name: 'EchoTool', arguments: { text: 'x' } }),
          (err: unknown) => err instanceof McpError && err.code === -32602,
        );
        const read = await theirs.callTool({ name: 'read_object', arguments: { id: objectId } });
        assert.equal(read.isError, true);
        assert.ok(!textOf(read).includes(TEXT));
        const search = await theirs.callTool({ name: 'search_objects', arguments: { query: 'lighthouse' } });
        assert.deepEqual((search.structuredContent as any).results, []);
        const similar = await theirs.callTool({ name: 'similar_objects', arguments: { object_id: objectId } });
        assert.equal(similar.isError, true);
        const run = await theirs.callTool({ name: 'read_run', arguments: { id: runId } });
        assert.equal(run.isError, true);
        const runs = await theirs.callTool({ name: 'search_runs', arguments: {} });
        assert.ok(!(runs.structuredContent as any).results.some((r: { id: string }) => r.id === runId));
        for (const uri of [`orrery://objects/${objectId}`, `orrery://objects/${imageId}`, `orrery://runs/${runId}`])
          await assert.rejects(
            theirs.readResource({ uri }),
            (err: unknown) => err instanceof McpError && err.code === -32002,
            uri,
          );
        const { resources } = await theirs.listResources();
        assert.ok(!resources.some((r) => r.uri.includes(objectId)));
      } finally {
        await theirs.close();
      }
    });
  });
}
