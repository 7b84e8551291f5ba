/**
 * Issue 14, hostile input: prototype keys, names of Object.prototype members used as fields,
 * deep JSON, unbounded offsets, CSV formula injection. Each case was a 500, a crash or a
 * polluted process before its fix.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from '../objects/helpers.ts';
import { startOpenAIWireServer } from '../support/openai-wire-server.ts';

const PROTOTYPE_NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: hostile input`, () => {
    let srv: TestServer;
    let other: { id: string; key: string };
    let objectId: string;

    before(async () => {
      srv = await startTestServer(dialect);
      other = await secondProject(srv);
      const o = await srv.api('POST', '/api/v1/objects', {
        name: 'plain',
        properties: { a: 1, constructor: 'named constructor', nested: { toString: 'x' } },
      });
      assert.equal(o.status, 200, JSON.stringify(o.body));
      objectId = o.body.id;
    });
    after(() => srv.close());

    it('refuses __proto__ and constructor.prototype keys in any JSON body, as Fastify does by default', async () => {
      for (const body of [
        '{"name":"x","properties":{"__proto__":{"ppmark":"x"}}}',
        '{"name":"x","properties":{"a":{"\\u005f_proto__":{"ppmark":"x"}}}}',
        '{"name":"x","properties":{"constructor":{"prototype":{"ppmark":"x"}}}}',
      ]) {
        const r = await srv.api('POST', '/api/v1/objects', body);
        assert.equal(r.status, 400, body);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, /__proto__/);
      }
      assert.equal(({} as Record<string, unknown>).ppmark, undefined);
    });

    it('keeps a property merely named constructor legal, and projects only own properties', async () => {
      const got = await srv.api(
        'GET',
        `/api/v1/objects/${objectId}?select=properties.constructor,properties.nested.toString,properties.toString`,
      );
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, {
        id: objectId,
        properties: { constructor: 'named constructor', nested: { toString: 'x' } },
      });
      const proto = await srv.api('GET', `/api/v1/objects/${objectId}?select=properties.__proto__.ppmark`);
      assert.equal(proto.status, 400);
      assert.match(proto.body.message, /prototype/);
      assert.equal(({} as Record<string, unknown>).ppmark, undefined);
    });

    it('answers field names of Object.prototype members as unknown fields, never 500', async () => {
      const layout = [
        ...PROTOTYPE_NAMES.map((f) => ({ field: f, name: f })),
        { field: 'properties.constructor', name: 'own' },
      ];
      const type = await srv.api('POST', '/api/v1/types', { name: 'Layout', table_layout: layout });
      assert.equal(type.status, 200, JSON.stringify(type.body));
      for (const f of PROTOTYPE_NAMES) {
        const bodies: Array<[string, unknown]> = [
          ['/api/v1/objects/find', `{"query":{${JSON.stringify(f)}:"x"}}`],
          ['/api/v1/objects/count', `{"query":{${JSON.stringify(f)}:"x"}}`],
          ['/api/v1/objects/search', `{"query":{"match":{${JSON.stringify(f)}:"x"}}}`],
          ['/api/v1/objects/search', { query: { sort: [{ field: f, order: 'asc' }] } }],
          ['/api/v1/objects/search', { query: {}, facets: [{ name: 'f', field: f }] }],
          ['/api/v1/runs/search', { query: `${f}:x` }],
          ['/api/v1/runs/facets', { facets: [{ name: 'f', field: f }] }],
        ];
        for (const [path, body] of bodies) {
          const r = await srv.api('POST', path, body);
          assert.ok(r.status < 500, `${path} ${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
        }
      }
      // Layout fields that name prototype members are empty cells; an own property of that name is data.
      const csv = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: [objectId],
        type: 'csv',
        layout: type.body.id,
      });
      assert.equal(csv.status, 200);
      assert.equal(csv.body.data, `${PROTOTYPE_NAMES.join(',')},own\r\n,,,,,named constructor\r\n`);
    });

    it('refuses JSON nested deeper than 64 levels, so no stored value can break a project', async () => {
      let deep: unknown = 'leaf';
      for (let i = 0; i < 1001; i++) deep = { d: deep };
      const r = await srv.api('POST', '/api/v1/objects', { name: 'deep', properties: deep });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /deeper than 64 levels at properties\.d\.d/);
      let ok: unknown = 'leaf';
      for (let i = 0; i < 60; i++) ok = { d: ok };
      assert.equal((await srv.api('POST', '/api/v1/objects', { name: 'fine', properties: ok })).status, 200);
      // The project still searches and facets.
      assert.equal((await srv.api('POST', '/api/v1/objects/search', { query: { full_text: 'leaf' } })).status, 200);
      const arrays = await srv.api(
        'POST',
        '/api/v1/runs/search',
        `{"query":"x","filters":${'['.repeat(100)}${']'.repeat(100)}}`,
      );
      assert.equal(arrays.status, 400);
    });

    it('bounds offset on every list, find and search, and keeps id with select=-id', async () => {
      for (const [method, path, body] of [
        ['GET', '/api/v1/objects?offset=1e20', undefined],
        ['GET', '/api/v1/objects?offset=100001', undefined],
        ['GET', '/api/v1/runs?offset=9223372036854775808', undefined],
        ['GET', '/api/v1/interactions?offset=1e20', undefined],
        ['GET', '/api/v1/prompts?offset=1e20', undefined],
        ['POST', '/api/v1/objects/find', { query: {}, offset: 1e20 }],
        ['POST', '/api/v1/objects/search', { query: {}, offset: 1e20 }],
        ['POST', '/api/v1/runs/search', { query: 'x', offset: 1e20 }],
        ['POST', '/api/v1/runs/search', { query: {}, offset: 2 ** 64 }],
      ] as const) {
        const r = await srv.api(method, path, body);
        assert.equal(
          r.status,
          400,
          `${method} ${path} ${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`,
        );
        assert.match(r.body.message, /offset/);
      }
      assert.equal((await srv.api('GET', '/api/v1/objects?offset=100000')).status, 200);
      const list = await srv.api('GET', '/api/v1/objects?select=-id');
      assert.equal(list.status, 200);
      assert.ok(list.body.every((o: { id?: string }) => typeof o.id === 'string'));
      const one = await srv.api('GET', `/api/v1/objects/${objectId}?select=-id`);
      assert.equal(one.status, 200);
      assert.equal(one.body.id, objectId);
    });

    it('holds model answers to the same rules: no prototype keys, no nesting past 64 levels', async () => {
      let deep = '1';
      for (let i = 0; i < 100; i++) deep = `{"a":${deep}}`;
      const wire = await startOpenAIWireServer({
        apiKey: null,
        text: (body) =>
          JSON.stringify(body).includes('deep please') ? deep : '{"__proto__":{"ppmark":"model"},"ok":true}',
      });
      try {
        const env = await srv.api('POST', '/api/v1/environments', {
          name: 'wire',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          default_model: 'm',
        });
        const ix = await srv.api('POST', '/api/v1/interactions', {
          name: 'json answers',
          status: 'draft',
          environment: env.body.id,
          result_schema: { type: 'object' },
          prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{ask}}' } }],
        });
        const tooDeep = await srv.api('POST', '/api/v1/runs', {
          interaction: ix.body.id,
          data: { ask: 'deep please' },
        });
        assert.equal(tooDeep.status, 502);
        assert.equal(tooDeep.body.error, 'invalid_result');
        assert.match(tooDeep.body.message, /deeper than 64 levels/);
        const proto = await srv.api('POST', '/api/v1/runs', { interaction: ix.body.id, data: { ask: 'proto please' } });
        assert.equal(proto.status, 200, JSON.stringify(proto.body));
        assert.deepEqual(proto.body.result, [{ type: 'json', value: { ok: true } }]);
        assert.equal(({} as Record<string, unknown>).ppmark, undefined);
      } finally {
        await wire.close();
      }
    });

    it('refuses NUL in URLs and JSON strings, which no database text can hold (PostgreSQL answered 500)', async () => {
      for (const path of [`/api/v1/objects/%00/text`, '/api/v1/objects?name=a%00b', '/api/v1/runs/x%00y']) {
        const r = await srv.api('GET', path);
        assert.equal(r.status, 400, path);
        assert.match(r.body.message, /NUL/);
      }
      for (const body of [
        '{"name":"a\\u0000b"}',
        '{"name":"ok","properties":{"k\\u0000":1}}',
        '{"name":"ok","tags":["\\u0000"]}',
      ]) {
        const r = await srv.api('POST', '/api/v1/objects', body);
        assert.equal(r.status, 400, body);
        assert.match(r.body.message, /NUL/);
      }
      assert.equal(
        (await srv.api('POST', '/api/v1/objects', '{"name":"escaped \\\\u0000 is text"}')).status,
        200,
        'a backslash before u0000 is plain text',
      );
    });

    it('refuses lone surrogates in JSON strings and keys, which PostgreSQL cannot store (POST /files/upload-url answered 500)', async () => {
      for (const [path, body] of [
        ['/api/v1/files/upload-url', '{"name":"a.txt","mime_type":"text/\\ud800plain"}'],
        ['/api/v1/objects', '{"name":"lone \\udc00 low"}'],
        ['/api/v1/objects', '{"name":"ok","properties":{"k\\ud83d":1}}'],
        ['/api/v1/environments', '{"name":"e","provider":"test","config":{"x":"\\udbff"}}'],
      ]) {
        const r = await srv.api('POST', path, body);
        assert.equal(r.status, 400, body);
        assert.match(r.body.message, /well-formed Unicode/);
      }
      // A pair is one character (😀), and text that merely looks like an escape is text.
      const paired = await srv.api('POST', '/api/v1/objects', '{"name":"smile \\ud83d\\ude00"}');
      assert.equal(paired.status, 200, JSON.stringify(paired.body));
      assert.equal(paired.body.name, 'smile \u{1F600}');
      assert.equal((await srv.api('POST', '/api/v1/objects', '{"name":"escaped \\\\ud800 is text"}')).status, 200);
    });

    it('refuses a Last-Event-ID that is not a chunk number, before the stream starts the run', async () => {
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'offline',
        provider: 'test',
        default_model: 'echo',
      });
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'streamed',
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'one two three' } }],
      });
      const run = await srv.api('POST', '/api/v1/runs', { interaction: ix.body.id, stream: true });
      for (const [query, headers] of [
        ['?lastEventId=0.5', {}],
        ['', { 'last-event-id': 'abc' }],
        ['?lastEventId=-1', {}],
        ['?lastEventId=1e400', {}],
      ] as const) {
        const r = await fetch(`${srv.url}/api/v1/runs/${run.body.id}/stream${query}`, {
          headers: { authorization: `Bearer ${srv.adminKey}`, ...headers },
          signal: AbortSignal.timeout(5000),
        });
        assert.equal(r.status, 400, `${query} ${JSON.stringify(headers)}`);
        assert.match(((await r.json()) as { message: string }).message, /Last-Event-ID must be the number of a chunk/);
      }
      assert.equal(
        (await srv.api('GET', `/api/v1/runs/${run.body.id}`)).body.status,
        'created',
        'no refused request started the run',
      );
      const ok = await fetch(`${srv.url}/api/v1/runs/${run.body.id}/stream?lastEventId=1`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
        signal: AbortSignal.timeout(5000),
      });
      const text = await ok.text();
      assert.match(text, /event: close/);
      assert.doesNotMatch(text, /^id: 1$/m, 'chunk 1 is skipped after Last-Event-ID 1');
    });

    it('quotes CSV fields with any line break and escapes formulas at the start of every line', async () => {
      const o = await srv.api('POST', '/api/v1/objects', {
        name: 'line\n=1+1',
        description: 'a\r=HYPERLINK("x")\r\n+2\n-3\n@4\n\tb',
      });
      const type = await srv.api('POST', '/api/v1/types', {
        name: 'Two',
        table_layout: [
          { field: 'name', name: 'n' },
          { field: 'description', name: 'd' },
        ],
      });
      const csv = await srv.api('POST', '/api/v1/objects/export', {
        objectIds: [o.body.id],
        type: 'csv',
        layout: type.body.id,
      });
      assert.equal(csv.status, 200);
      assert.equal(csv.body.data, `n,d\r\n"line\n'=1+1","a\r'=HYPERLINK(""x"")\r\n'+2\n'-3\n'@4\n'\tb"\r\n`);
      // Nothing of that leaked into the other project.
      assert.deepEqual((await srv.api('GET', '/api/v1/objects', undefined, other.key)).body, []);
    });
  });
}
