/**
 * Issue 14, the freeze class: every input that drives work has a bound checked before the work,
 * answered with a 400 that names it (how long each holds the event loop: bench/hostile.ts).
 * Before the bounds, each of these took seconds of the event loop and then answered 500.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { TS_LOADER, runnable } from '../support/processes.ts';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: bounds on work-driving input`, () => {
    let srv: TestServer;

    before(async () => {
      srv = await startTestServer(dialect);
      const { interaction } = await seedEcho(srv);
      await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'hello' } });
      await srv.api('POST', '/api/v1/objects', { name: 'o', properties: { a: 1 } });
    });
    after(() => srv.close());

    const hostile: Array<[string, string, string, unknown, RegExp]> = [
      [
        'handlebars nesting',
        'POST',
        '/api/v1/prompts',
        {
          name: 'p',
          role: 'user',
          content_type: 'handlebars',
          content: '{{#if a}}'.repeat(3000) + 'x' + '{{/if}}'.repeat(3000),
        },
        /nested more than 32/,
      ],
      [
        'handlebars expressions',
        'POST',
        '/api/v1/prompts',
        { name: 'p', role: 'user', content_type: 'handlebars', content: '{{a}}'.repeat(50_000) },
        /more than 1000 \{\{…\}\} expressions/,
      ],
      [
        'template size',
        'POST',
        '/api/v1/prompts',
        { name: 'p', role: 'user', content_type: 'text', content: 'x'.repeat(300_000) },
        /at most 262144/,
      ],
      [
        'object search sort keys',
        'POST',
        '/api/v1/objects/search',
        { query: {}, sort: range(10_000).map((i) => ({ field: `properties.f${i}`, order: 'asc' })) },
        /sort/,
      ],
      [
        'lucene terms',
        'POST',
        '/api/v1/runs/search',
        {
          query: range(100_000)
            .map((i) => `w${i}`)
            .join(' OR ')
            .slice(0, 9_999),
        },
        /more than 256 terms/,
      ],
      [
        'lucene length',
        'POST',
        '/api/v1/runs/search',
        {
          query: range(100_000)
            .map((i) => `w${i}`)
            .join(' OR '),
        },
        /longer than 10000 characters/,
      ],
      [
        'facet boundaries',
        'POST',
        '/api/v1/runs/search',
        { query: 'x', facets: { e: { type: 'number', path: 'execution_time', boundaries: range(1_000_000) } } },
        /at most 400/,
      ],
      [
        'tags filter',
        'POST',
        '/api/v1/runs/search',
        { query: 'x', filters: { tags: range(50_000).map((i) => `t${i}`) } },
        /at most 1000 values/,
      ],
      [
        'client tags filter',
        'POST',
        '/api/v1/runs/search',
        { query: { tags: range(50_000).map((i) => `t${i}`) } },
        /at most 1000 values/,
      ],
      [
        '$in values',
        'POST',
        '/api/v1/objects/find',
        { query: { name: { $in: range(100_001).map((i) => `n${i}`) } } },
        /at most 100000 values/,
      ],
      [
        'select paths',
        'POST',
        '/api/v1/objects/find',
        {
          query: {},
          select: range(3000)
            .map((i) => `properties.p${i}`)
            .join(' '),
        },
        /at most 200/,
      ],
      ['object name', 'POST', '/api/v1/objects', { name: 'n'.repeat(100_000) }, /1000 characters/],
      ['object tags', 'POST', '/api/v1/objects', { name: 'n', tags: range(5000).map(String) }, /1000 items/],
      [
        'object facets',
        'POST',
        '/api/v1/objects/search',
        { query: {}, facets: range(1000).map((i) => ({ name: `f${i}`, field: 'status' })) },
        /10 items/,
      ],
      [
        'run facets',
        'POST',
        '/api/v1/runs/facets',
        { facets: range(1000).map((i) => ({ name: `f${i}`, field: 'status' })) },
        /at most 25 facets/,
      ],
    ];

    for (const [what, method, path, body, message] of hostile) {
      it(`refuses ${what} with a 400 that names the bound`, async () => {
        const r = await srv.api(method, path, body);
        assert.equal(r.status, 400, `${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        assert.equal(typeof r.body.error, 'string');
        assert.match(r.body.message, message);
      });
    }

    it('keeps serving GET /health after each hostile request above is answered', async () => {
      // How long the event loop is held during each is measured by `npm run bench -- hostile`.
      for (const [what, method, path, body] of hostile) {
        const r = await srv.api(method, path, JSON.stringify(body));
        assert.equal(r.status, 400, what);
        assert.equal((await fetch(`${srv.url}/health`)).status, 200, `GET /health after ${what}`);
      }
    });

    it('answers an oversized URL with 431 in the JSON error shape', async () => {
      const r = await fetch(`${srv.url}/api/v1/runs?tag=${'t,'.repeat(20_000)}`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
      });
      assert.equal(r.status, 431);
      const body = (await r.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message', 'status']);
      assert.equal(body.status, 431);
    });

    it('reports the event-loop delay in /metrics', async () => {
      const text = await (await fetch(`${srv.url}/metrics`)).text();
      assert.match(text, /^orrery_nodejs_eventloop_lag_p99_seconds \d/m);
      assert.match(text, /^orrery_nodejs_eventloop_lag_max_seconds \d/m);
    });
  });
}

describe('process guards', () => {
  it('log an uncaught exception and a rejection, count them, and keep the process running', () => {
    const script = `
      import pino from 'pino';
      import { installProcessGuards } from '${runnable('./src/process-guards.ts')}';
      import { Metrics } from '${runnable('./src/http/metrics.ts')}';
      const metrics = new Metrics();
      installProcessGuards(pino(), metrics);
      setImmediate(() => { throw new Error('boom in a timer'); });
      Promise.reject(new Error('nobody awaited me'));
      setTimeout(async () => {
        const text = await metrics.registry.metrics();
        console.log(text.split('\\n').filter((l) => l.startsWith('orrery_uncaught_errors_total{')).join(' | '));
        console.log('still alive');
      }, 100);
    `;
    const r = spawnSync(process.execPath, [...TS_LOADER, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /"level":60.*boom in a timer/);
    assert.match(r.stdout, /"level":50.*nobody awaited me/);
    assert.match(r.stdout, /kind="exception"} 1/);
    assert.match(r.stdout, /kind="rejection"} 1/);
    assert.match(r.stdout, /still alive/);
  });
});
