/**
 * Issue 14, secrets in logs: a key used every way the README shows, signed URLs, and failing
 * requests never put a credential into what the server logs, even at the most verbose level.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { scrubSecrets } from '../../src/http/log-redaction.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: secrets never reach the log`, () => {
    let srv: TestServer;
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });

    before(async () => {
      srv = await startTestServer(dialect, { logLevel: 'trace' }, { logger: { stream } });
    });
    after(() => srv.close());

    it('redacts keys, tokens and signatures in URLs, headers, bodies and errors', async () => {
      const key = srv.adminKey;
      const { interaction } = await seedEcho(srv);
      // The header, as every client sends it.
      const run = await srv.api('POST', '/api/v1/runs', {
        interaction: interaction.id,
        data: { text: 'hi' },
        stream: true,
      });
      assert.equal(run.status, 200);
      // ?access_token= on the stream route (the README's curl line), with the key and with a JWT.
      const streamed = await fetch(`${srv.url}/api/v1/runs/${run.body.id}/stream?access_token=${key}`);
      assert.equal(streamed.status, 200);
      await streamed.text();
      // The key in a /token/issue body, with no header (as the README documents), and the JWT it gives.
      const issued = await srv.api('POST', '/api/v1/token/issue', { type: 'apikey', key }, null);
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      const jwt = issued.body.token as string;
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 200);
      assert.equal(
        (await fetch(`${srv.url}/api/v1/runs/${run.body.id}/stream?access_token=${jwt}`).then((r) => r.text())).length >
          0,
        true,
      );
      // Signed upload and download URLs.
      const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt' });
      const put = await fetch(up.body.url, { method: 'PUT', body: 'hello', headers: { 'content-type': 'text/plain' } });
      assert.equal(put.status, 200);
      const down = await srv.api('POST', '/api/v1/objects/download-url', { file: up.body.id });
      assert.equal((await fetch(down.body.url)).status, 200);
      const signatures = [new URL(up.body.url).searchParams.get('sig'), new URL(down.body.url).searchParams.get('sig')];
      // Failing requests: a wrong key in the header, in the query, in a token body, a tampered signature.
      const wrong = `sk-${'w'.repeat(40)}`;
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, wrong)).status, 401);
      assert.equal((await fetch(`${srv.url}/api/v1/runs/${run.body.id}/stream?access_token=${wrong}`)).status, 401);
      assert.equal((await srv.api('POST', '/api/v1/token/issue', { type: 'apikey', key: wrong }, null)).status, 401);
      assert.equal(
        (await fetch(up.body.url.replace(/sig=[^&]+/, 'sig=AAAA'), { method: 'PUT', body: 'x' })).status >= 400,
        true,
      );
      assert.equal(
        (await fetch(`${srv.url}/api/v1/nowhere?token=${key}`, { headers: { cookie: `session=${key}` } })).status,
        404,
      );

      const log = lines.join('');
      assert.ok(log.includes('"url":"/api/v1/runs/'), 'request URLs are logged');
      assert.ok(log.includes('[REDACTED]'), 'something was redacted');
      for (const secret of [key, key.slice(3), jwt, wrong, ...signatures]) {
        assert.ok(secret && !log.includes(secret), `the log holds a secret: ${secret?.slice(0, 12)}…`);
      }
    });
  });
}

describe('scrubSecrets', () => {
  it('censors every parameter, header form and key shape the server may print', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLWhlcmU';
    assert.equal(
      scrubSecrets(
        `GET /x?access_token=sk-abcdefghijklmnop&a=1&sig=abc&X-Amz-Signature=f00&X-Amz-Credential=AKIA%2F&token=${jwt}&Signature=zz`,
      ),
      'GET /x?access_token=[REDACTED]&a=1&sig=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]&token=[REDACTED]&Signature=[REDACTED]',
    );
    assert.equal(
      scrubSecrets(`failed with Authorization: Bearer ${jwt}`),
      'failed with Authorization: Bearer [REDACTED]',
    );
    assert.equal(scrubSecrets('key sk-0123456789abcdefXYZ in a message'), 'key [REDACTED] in a message');
    assert.equal(scrubSecrets(`token ${jwt}.`), 'token [REDACTED].');
  });
});
