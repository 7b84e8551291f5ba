/**
 * Issue 14, server-side request forgery: the egress policy refuses loopback, private, link-local,
 * metadata and unspecified targets as it is told, on the address literal when an environment is
 * saved and on the resolved address when a run connects, and redirects are never followed.
 * No traffic leaves loopback: names resolve through a stub resolver, never DNS.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { classify, EgressPolicy, type Resolver } from '../../src/providers/egress.ts';

describe('egress policy', () => {
  it('classifies every form of an address, IPv4-mapped IPv6 included', () => {
    const cases: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['127.9.9.9', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.20.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd12::1', 'private'],
      ['169.254.169.254', 'metadata'],
      ['100.100.100.200', 'metadata'],
      ['fd00:ec2::254', 'metadata'],
      ['169.254.1.1', 'link-local'],
      ['fe80::1', 'link-local'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.1', 'reserved'],
      ['192.0.2.10', 'reserved'],
      ['93.184.216.34', 'public'],
      ['2606:4700::1111', 'public'],
      ['::ffff:8.8.8.8', 'public'],
    ];
    for (const [ip, kind] of cases) assert.equal(classify(ip), kind, ip);
  });

  it('allows what its setting lists, and link-local or metadata only when named', () => {
    const pub = new EgressPolicy('public', 'test');
    assert.equal(pub.allowsAddress('93.184.216.34'), true);
    assert.equal(pub.allowsAddress('10.0.0.1'), false);
    assert.equal(pub.allowsAddress('127.0.0.1'), false);
    const priv = new EgressPolicy('private', 'test');
    assert.equal(priv.allowsAddress('10.0.0.1'), true);
    assert.equal(priv.allowsAddress('::1'), true);
    assert.equal(priv.allowsAddress('169.254.169.254'), false);
    assert.equal(priv.allowsAddress('0.0.0.0'), false);
    const list = new EgressPolicy('10.1.0.0/16, ollama.internal, *.corp.example, 169.254.169.254', 'test');
    assert.equal(list.allowsAddress('10.1.2.3'), true);
    assert.equal(list.allowsAddress('10.2.0.1'), false);
    assert.equal(list.allowsAddress('93.184.216.34'), false, 'no public keyword: only the list');
    assert.equal(list.allowsAddress('169.254.169.254'), true);
    assert.equal(list.allowsHost('ollama.internal'), true);
    assert.equal(list.allowsHost('gpu.corp.example'), true);
    assert.equal(list.allowsHost('corp.example.evil'), false);
    assert.throws(() => new EgressPolicy('10.0.0.0/99', 'test'), /not a CIDR/);
    assert.throws(() => new EgressPolicy('http://x', 'test'), /not public, private/);
    assert.equal(EgressPolicy.forListener('127.0.0.1').setting, 'private');
    assert.equal(EgressPolicy.forListener('::1').setting, 'private');
    assert.equal(EgressPolicy.forListener('0.0.0.0').setting, 'public');
    assert.equal(EgressPolicy.forListener('10.0.0.5').setting, 'public');
  });
});

/** A stub DNS: names of the test resolve to loopback addresses only. */
const stubResolver =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: egress through environments and runs`, () => {
    let wire: WireServer;
    let redirector: Server;
    let redirectUrl: string;

    before(async () => {
      wire = await startOpenAIWireServer({ apiKey: null, text: 'secret answer of an internal service' });
      redirector = createServer((_req, res) => {
        res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      });
      await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
      redirectUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/v1`;
    });
    after(async () => {
      await wire.close();
      await new Promise((r) => redirector.close(r));
    });

    let n = 0;
    async function runOn(srv: TestServer, endpoint: string) {
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'e',
        provider: 'openai_compatible',
        endpoint_url: endpoint,
        default_model: 'm',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `ix${++n}`,
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'hi' } }],
      });
      return srv.api('POST', '/api/v1/runs', { interaction: ix.body.id });
    }

    describe('a server listening on all interfaces (default policy: public)', () => {
      let srv: TestServer;
      const port = () => new URL(wire.url).port;
      before(async () => {
        srv = await startTestServer(
          dialect,
          { host: '0.0.0.0' },
          { resolve: stubResolver({ 'llm.example.test': ['127.0.0.1'], 'mixed.example.test': ['127.0.0.1', '::1'] }) },
        );
      });
      after(() => srv.close());

      it('refuses loopback, private, link-local, metadata and unspecified literals when an environment is saved', async () => {
        for (const endpoint of [
          'http://127.0.0.1:11434/v1',
          'http://localhost:11434/v1',
          'http://2130706433/v1',
          'http://0x7f.0.0.1/v1',
          'http://017700000001/v1',
          'http://[::1]:8000/v1',
          'http://[::ffff:127.0.0.1]/v1',
          'http://[::ffff:7f00:1]/v1',
          'http://10.0.0.5/v1',
          'http://192.168.1.10/v1',
          'http://169.254.169.254/latest',
          'http://[fd00:ec2::254]/',
          'http://100.100.100.200/',
          'http://0.0.0.0:8080/v1',
          'http://[::]/v1',
        ]) {
          const r = await srv.api('POST', '/api/v1/environments', {
            name: 'x',
            provider: 'openai_compatible',
            endpoint_url: endpoint,
          });
          assert.equal(r.status, 400, `${endpoint}: ${JSON.stringify(r.body)}`);
          assert.match(r.body.message, /egress policy ORRERY_EGRESS=public/);
          assert.equal(r.body.details.reason, 'egress_refused');
        }
        const ok = await srv.api('POST', '/api/v1/environments', {
          name: 'x',
          provider: 'openai_compatible',
          endpoint_url: 'http://llm.example.test/v1',
        });
        assert.equal(ok.status, 200, 'a name is checked when connecting, not when saved');
        const env = ok.body.id;
        assert.equal(
          (await srv.api('PUT', `/api/v1/environments/${env}`, { endpoint_url: 'http://127.0.0.1/v1' })).status,
          400,
        );
      });

      it('fails a run whose endpoint name resolves to a refused address with egress_refused, sending nothing', async () => {
        const before = wire.requests.length;
        const r = await runOn(srv, `http://llm.example.test:${port()}/v1`);
        assert.equal(r.status, 502);
        assert.equal(r.body.error, 'egress_refused');
        assert.match(r.body.message, /llm\.example\.test.*127\.0\.0\.1.*loopback/);
        assert.doesNotMatch(r.body.message, /secret answer/);
        assert.equal(wire.requests.length, before, 'nothing reached the target');
        const run = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
        assert.equal(run.body.status, 'failed');
        assert.equal(run.body.error.code, 'egress_refused');
      });
    });

    describe('ORRERY_EGRESS naming a host and a single address', () => {
      let srv: TestServer;
      before(async () => {
        srv = await startTestServer(
          dialect,
          { host: '0.0.0.0', egress: 'public,llm.example.test,127.0.0.2' },
          {
            resolve: stubResolver({
              'llm.example.test': ['127.0.0.1'],
              'pinned.example.test': ['127.0.0.1', '127.0.0.2'],
            }),
          },
        );
      });
      after(() => srv.close());

      it('lets a listed host through, whatever it resolves to', async () => {
        const r = await runOn(srv, `http://llm.example.test:${new URL(wire.url).port}/v1`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.result[0].value, 'secret answer of an internal service');
      });

      it('connects to the address it checked, not to another answer of the same name (no DNS rebinding)', async () => {
        // pinned.example.test answers 127.0.0.1 (refused) and 127.0.0.2 (listed): the connection
        // must go to 127.0.0.2, where nothing listens, not to the wire server on 127.0.0.1.
        const before = wire.requests.length;
        const r = await runOn(srv, `http://pinned.example.test:${new URL(wire.url).port}/v1`);
        assert.equal(r.status, 502);
        assert.equal(r.body.error, 'provider_unreachable', JSON.stringify(r.body));
        assert.match(r.body.message, /ECONNREFUSED 127\.0\.0\.2/);
        assert.equal(wire.requests.length, before);
      });
    });

    describe('the default on a loopback listener (private)', () => {
      let srv: TestServer;
      before(async () => {
        srv = await startTestServer(dialect);
      });
      after(() => srv.close());

      it('keeps a local model server working, and refuses metadata addresses', async () => {
        const r = await runOn(srv, wire.url);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const meta = await srv.api('POST', '/api/v1/environments', {
          name: 'm',
          provider: 'openai_compatible',
          endpoint_url: 'http://169.254.169.254/v1',
        });
        assert.equal(meta.status, 400);
        assert.match(meta.body.message, /ORRERY_EGRESS=private/);
      });

      it('never follows a redirect, to a refused address or any other', async () => {
        const r = await runOn(srv, redirectUrl);
        assert.equal(r.status, 502);
        assert.match(r.body.message, /answered HTTP 307/);
      });
    });
  });
}
