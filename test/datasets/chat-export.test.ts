/**
 * A dataset exported in OpenAI's fine-tuning chat format (format=openai_chat), on both databases:
 * each item copied from a run is its run's prompt then its expected value as the assistant's
 * answer; items that cannot be written so are left out and counted in the `x-skipped-items`
 * trailer; an unknown format is refused by name.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

/** GET with node:http, which reads trailers (fetch does not). */
function getWithTrailers(
  url: string,
  key: string,
): Promise<{ status: number; body: string; trailers: NodeJS.Dict<string> }> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, trailers: res.trailers }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: dataset export as fine-tuning chats`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('writes the run prompt and the final answer of each item copied from a run', async () => {
      const { interaction } = await seedEcho(srv, { name: `Chat export ${dialect}` });
      for (const text of ['first question', 'second question']) {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: interaction.id,
          data: { text },
          tags: ['tune'],
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      const ds = await srv.api('POST', '/api/v1/datasets', { name: `chats ${dialect}` });
      const copied = await srv.api('POST', `/api/v1/datasets/${ds.body.id}/items`, {
        from_runs: { query: 'tags:tune', limit: 10 },
      });
      assert.equal(copied.body.ids.length, 2, JSON.stringify(copied.body));
      // Written by hand: no run to take a prompt from.
      await srv.api('POST', `/api/v1/datasets/${ds.body.id}/items`, {
        items: [{ data: { text: 'x' }, expected: 'y' }],
      });

      const out = await getWithTrailers(
        `${srv.url}/api/v1/datasets/${ds.body.id}/export?format=openai_chat`,
        srv.adminKey,
      );
      assert.equal(out.status, 200, out.body);
      const lines = out.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.sort((a, b) => a.messages[0].content.localeCompare(b.messages[0].content)),
        [
          {
            messages: [
              { role: 'user', content: 'Say: first question' },
              { role: 'assistant', content: 'Say: first question' },
            ],
          },
          {
            messages: [
              { role: 'user', content: 'Say: second question' },
              { role: 'assistant', content: 'Say: second question' },
            ],
          },
        ],
      );
      assert.equal(out.trailers['x-skipped-items'], '1');

      const bad = await srv.api('GET', `/api/v1/datasets/${ds.body.id}/export?format=csv`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /format/);
      const other = await srv.api('GET', `/api/v1/datasets/nope/export?format=openai_chat`);
      assert.equal(other.status, 404);
    });
  });
}
