/**
 * Error text is bounded (MAX_ERROR_MESSAGE_CHARS, cut with a marker): a template that throws a
 * 5 MB message makes neither a 5 MB answer nor a 5 MB stored run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { MAX_ERROR_MESSAGE_CHARS } from '../../src/util/error-message.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: error messages are bounded`, () => {
    let srv: TestServer;
    let ix: string;

    before(async () => {
      // Building a 5 MB string takes a while on a busy machine: the CPU bound is not what is tested.
      srv = await startTestServer(dialect, { templateCpuMs: 30_000 });
      const env = (
        await srv.api('POST', '/api/v1/environments', { name: 'offline', provider: 'test', default_model: 'echo' })
      ).body.id;
      ix = (
        await srv.api('POST', '/api/v1/interactions', {
          name: 'thrower',
          status: 'draft',
          environment: env,
          prompts: [
            {
              type: 'template',
              template: { role: 'user', content_type: 'jst', content: "throw new Error('e'.repeat(5e6))" },
            },
          ],
        })
      ).body.id;
    });
    after(() => srv.close());

    it('cuts a template error in the answer and the stored run, and says it was cut', async () => {
      const res = await fetch(`${srv.url}/api/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ interaction: ix, data: {} }),
      });
      const text = await res.text();
      assert.equal(res.status, 422, text.slice(0, 500));
      assert.ok(text.length < 4 * MAX_ERROR_MESSAGE_CHARS, `answer of ${text.length} characters`);
      const body = JSON.parse(text);
      assert.equal(body.error, 'template_error');
      assert.ok(body.message.length <= MAX_ERROR_MESSAGE_CHARS);
      assert.match(body.message, /error message cut: \d+ more characters\]$/);
      const stored = await srv.api('GET', `/api/v1/runs/${body.details.run_id}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'template_error');
      assert.ok(
        stored.body.error.message.length <= MAX_ERROR_MESSAGE_CHARS,
        `stored message of ${stored.body.error.message.length}`,
      );
      assert.match(stored.body.error.message, /^Error: e+|e{100}/);
      assert.match(stored.body.error.message, /error message cut: \d+ more characters\]$/);
      assert.ok(JSON.stringify(stored.body).length < 4 * MAX_ERROR_MESSAGE_CHARS);
    });
  });
}
