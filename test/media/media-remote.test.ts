/**
 * `https` media inputs that Orrery itself reads, for providers that take bytes only (Bedrock
 * here): through the egress policy, within ORRERY_MEDIA_* while the answer streams in. Against a
 * local https server with a certificate kept for the tests (the outbound layer trusts it through
 * BuildOptions.ca) and an egress policy that allows 127.0.0.1 only, named explicitly.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { regionOf } from '../../src/providers/bedrock.ts';

const SCHEMA = { type: 'object', properties: { photo: { type: 'string', editor: 'media' } } };
const LIMIT = 4096;

/** A key and a self-signed certificate for 127.0.0.1, made for these tests only (test/fixtures/tls). */
const TLS_FIXTURES = new URL('../fixtures/tls/', import.meta.url);
const certificate = () => ({
  key: readFileSync(new URL('loopback-key.pem', TLS_FIXTURES), 'utf8'),
  cert: readFileSync(new URL('loopback-cert.pem', TLS_FIXTURES), 'utf8'),
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: https media inputs read by Orrery`, () => {
    let srv: TestServer;
    let bedrock: BedrockWireServer;
    let openai: WireServer;
    let site: https.Server;
    let origin: string;
    let png: Buffer;
    const hits: string[] = [];
    let bedrockIx: string;
    let openaiIx: string;

    const interaction = async (env: Record<string, unknown>, model: string) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `${String(env.provider)} remote`, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `Remote ${String(env.provider)}`,
        environment: e.body.id,
        model,
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'Describe it', content_type: 'text' } }],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id as string;
    };

    before(async () => {
      png = await sharp({ create: { width: 9, height: 3, channels: 3, background: '#0a6' } })
        .png()
        .toBuffer();
      const tls = certificate();
      site = https.createServer(tls, (req, res) => {
        hits.push(req.url!);
        if (req.url === '/leaf.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
        // Declares more than the limit: refused on its headers.
        if (req.url === '/declared-big.png')
          return res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(LIMIT * 10) }).end();
        // No length said (chunked), and more bytes than the limit: refused while streaming in.
        if (req.url === '/endless.png') {
          res.writeHead(200, { 'content-type': 'image/png' });
          const chunk = Buffer.alloc(1024, 1);
          const more = () => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', more);
          };
          return more();
        }
        // Answers its headers and one byte, then nothing more.
        if (req.url === '/slow.png') {
          res.writeHead(200, { 'content-type': 'image/png' });
          return res.write(png.subarray(0, 1));
        }
        if (req.url === '/to-private.png') return res.writeHead(302, { location: 'https://10.0.0.1/x.png' }).end();
        if (req.url === '/to-http.png') return res.writeHead(302, { location: `http://127.0.0.1/x.png` }).end();
        if (req.url === '/hop.png') return res.writeHead(301, { location: '/leaf.png' }).end();
        res.writeHead(404).end();
      });
      await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
      origin = `https://127.0.0.1:${(site.address() as AddressInfo).port}`;
      srv = await startTestServer(
        dialect,
        {
          egress: '127.0.0.1',
          media: { maxBytes: LIMIT, maxPixels: 40_000_000, maxPdfBytes: LIMIT, maxPdfPages: 100, fetchTimeoutMs: 500 },
        },
        { ca: tls.cert },
      );
      bedrock = await startBedrockWireServer({ region: regionOf({}), text: 'seen' });
      openai = await startOpenAIWireServer({ apiKey: null });
      bedrockIx = await interaction(
        { provider: 'bedrock', endpoint_url: bedrock.url, apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}` },
        'us.anthropic.claude-sonnet-4-20250514-v1:0',
      );
      openaiIx = await interaction(
        { provider: 'openai_compatible', endpoint_url: openai.url, api_key: 'sk-test' },
        'gpt-4o-mini',
      );
    });
    after(async () => {
      await srv.close();
      await bedrock.close();
      await openai.close();
      site.closeAllConnections();
      await new Promise((r) => site.close(r));
    });

    it('sends Bedrock the bytes it read from the URL, and keeps only the link and digest on the run', async () => {
      bedrock.requests.length = 0;
      const run = await srv.client().interactions.execute(bedrockIx, { data: { photo: `${origin}/leaf.png` } });
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const content = (bedrock.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.equal(content[1].image.format, 'png');
      assert.deepEqual(Buffer.from(content[1].image.source.bytes, 'base64'), png);
      const stored = (await srv.api('GET', `/api/v1/runs/${run.id}`)).body.prompt.at(-1).content[1];
      assert.equal(stored.url, `${origin}/leaf.png`);
      assert.equal(stored.object.size, png.length);
      assert.ok(!JSON.stringify(stored).includes(png.toString('base64').slice(0, 16)));
    });

    it('follows a redirect that stays https, each hop through the egress policy', async () => {
      bedrock.requests.length = 0;
      const run = await srv.client().interactions.execute(bedrockIx, { data: { photo: `${origin}/hop.png` } });
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const content = (bedrock.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.deepEqual(Buffer.from(content[1].image.source.bytes, 'base64'), png);
    });

    it('leaves an image link to OpenAI, which fetches it itself', async () => {
      hits.length = 0;
      await srv.client().interactions.execute(openaiIx, { data: { photo: `${origin}/leaf.png` } });
      const content = (openai.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.deepEqual(content[1], { type: 'image_url', image_url: { url: `${origin}/leaf.png` } });
      assert.deepEqual(hits, [], 'Orrery did not read it');
    });

    const refused = async (path: string, status: number, pattern: RegExp) => {
      const calls = bedrock.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: bedrockIx, data: { photo: `${origin}${path}` } });
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.match(r.body.message, pattern);
      assert.equal(bedrock.requests.length, calls, 'no provider call');
    };

    it('refuses a declared length over the limit, and a body that streams past it, with a 413', async () => {
      await refused('/declared-big.png', 413, /data\.photo: .* is 40960 bytes; the limit is 4096/);
      await refused('/endless.png', 413, /data\.photo is larger than 4096 bytes/);
    });

    it('refuses a server too slow to answer in full with a 400 naming ORRERY_MEDIA_FETCH_TIMEOUT', async () => {
      await refused(
        '/slow.png',
        400,
        /data\.photo: .* did not answer in full within 500 ms \(ORRERY_MEDIA_FETCH_TIMEOUT\)/,
      );
    });

    it('refuses a redirect to a private address by the egress policy, and one to http', async () => {
      await refused('/to-private.png', 400, /data\.photo: .*10\.0\.0\.1.* egress policy/);
      await refused('/to-http.png', 400, /data\.photo: .* redirects to a http URL; only https is fetched/);
    });

    it('refuses what the URL answers when it is not a readable image, or not found', async () => {
      await refused('/nothing.png', 400, /data\.photo: fetching .* answered HTTP 404/);
    });
  });
}
