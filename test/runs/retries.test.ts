/**
 * Issue 16, retries: one retry loop over the provider call, full-jitter backoff or the wait the
 * provider asked for, within a budget of retries and time, never after a streamed chunk; each
 * attempt kept on the run and counted in /metrics. Tested with the `test` provider's fault
 * models and with a local OpenAI wire server that answers 429 and 503 on purpose.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { nextDelay, retryPolicyOf, DEFAULT_RETRY_POLICY } from '../../src/runs/retry.ts';
import { ProviderError } from '../../src/providers/driver.ts';
import { retryAfterMs } from '../../src/providers/provider-http.ts';

describe('retry policy', () => {
  it('backs off with full jitter, doubling, within the retries and the time budget', () => {
    const p = { maxRetries: 3, maxTimeMs: 10_000, baseDelayMs: 100, maxDelayMs: 1000 };
    const retryable = new ProviderError('provider_error', 'x', 503, true);
    assert.equal(
      nextDelay(retryable, 1, 0, p, () => 1),
      100,
    );
    assert.equal(
      nextDelay(retryable, 2, 0, p, () => 1),
      200,
    );
    assert.equal(
      nextDelay(retryable, 3, 0, p, () => 0.5),
      200,
    );
    assert.equal(
      nextDelay(retryable, 4, 0, p, () => 1),
      undefined,
      'retries spent',
    );
    assert.equal(
      nextDelay(retryable, 1, 9_950, p, () => 1),
      undefined,
      'past the time budget',
    );
    assert.equal(nextDelay(new ProviderError('provider_bad_request', 'x', 400), 1, 0, p), undefined, 'not retryable');
    assert.equal(nextDelay(new Error('x'), 1, 0, p), undefined);
    assert.equal(
      nextDelay(new ProviderError('provider_rate_limited', 'x', 429, true, 2500), 1, 0, p, () => 0),
      2500,
      'the wait the provider asked for',
    );
  });

  it('reads retry-after-ms, x-ms-retry-after-ms, and retry-after in seconds or as a date', () => {
    assert.equal(retryAfterMs({ 'retry-after-ms': '1500' }), 1500);
    assert.equal(retryAfterMs({ 'x-ms-retry-after-ms': '250' }), 250);
    assert.equal(retryAfterMs({ 'retry-after': '3' }), 3000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, now), 5000);
    assert.equal(retryAfterMs({ 'retry-after': 'soon' }), undefined);
    assert.equal(retryAfterMs({}), undefined);
  });

  it("takes an environment's config.retries as a number or an object", () => {
    assert.deepEqual(retryPolicyOf(undefined), DEFAULT_RETRY_POLICY);
    assert.equal(retryPolicyOf({ retries: 0 }).maxRetries, 0);
    assert.deepEqual(retryPolicyOf({ retries: { max_retries: 5, max_time_ms: 2000, base_delay_ms: 10 } }), {
      ...DEFAULT_RETRY_POLICY,
      maxRetries: 5,
      maxTimeMs: 2000,
      baseDelayMs: 10,
    });
    assert.deepEqual(retryPolicyOf({ retries: { max_retries: -1, max_time_ms: 'x' } }), DEFAULT_RETRY_POLICY);
  });
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: runs survive providers that fail once`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let env: string;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ apiKey: null, text: 'wire answer' });
      env = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'faults',
          provider: 'test',
          default_model: 'echo',
          config: { retries: { base_delay_ms: 5, max_delay_ms: 20 }, timeout_ms: 300 },
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    /** An interaction whose prompt is unique (the counting fault models count per prompt). */
    const interaction = async (environment = env) =>
      (
        await srv.api('POST', '/api/v1/interactions', {
          name: `retry ${++n}`,
          status: 'draft',
          environment,
          prompts: [
            {
              type: 'template',
              template: { role: 'user', content_type: 'text', content: `call number ${n} of ${dialect} one two three` },
            },
          ],
        })
      ).body.id as string;
    const run = async (model: string, extra: Record<string, unknown> = {}) =>
      srv.api('POST', '/api/v1/runs', { interaction: await interaction(), config: { model }, ...extra });
    const stream = async (model: string) => {
      const created = await run(model, { stream: true });
      const text = await (
        await fetch(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
      ).text();
      const chunks = [...text.matchAll(/^data: (".*")$/gm)].map((m) => JSON.parse(m[1]) as string);
      return { chunks, final: JSON.parse(/event: close\ndata: (.*)\n/.exec(text)![1]) };
    };

    it('retries a 503 and completes, keeping every attempt on the run', async () => {
      const r = await run('flaky:2');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'completed');
      assert.deepEqual(
        r.body.attempts.map((a: { status: string }) => a.status),
        ['failed', 'failed', 'completed'],
      );
      assert.equal(r.body.attempts[0].error.code, 'provider_error');
      assert.match(r.body.attempts[0].error.message, /503/);
      assert.ok(r.body.attempts.every((a: { duration_ms: number }) => typeof a.duration_ms === 'number'));
      assert.deepEqual((await srv.api('GET', `/api/v1/runs/${r.body.id}`)).body.attempts, r.body.attempts);
      const metrics = await (await fetch(`${srv.url}/metrics`)).text();
      assert.match(metrics, /orrery_provider_retries_total\{provider="test",code="provider_error"\} [2-9]/);
    });

    it('waits what a 429 asks for (retry-after) before the retry', async () => {
      const started = Date.now();
      const r = await run('rate_limit:1:400');
      assert.equal(r.body.status, 'completed');
      assert.ok(Date.now() - started >= 400, 'the retry waited for retry-after');
      assert.ok(r.body.execution_time >= 400);
      assert.deepEqual(
        r.body.attempts.map((a: { status: string; error?: { code: string } }) => a.error?.code ?? a.status),
        ['provider_rate_limited', 'completed'],
      );
    });

    it('fails after its retries, and does not retry past the time budget or what is not retryable', async () => {
      const spent = await run('flaky:9');
      assert.equal(spent.status, 502);
      assert.equal(spent.body.run.attempts.length, 4, 'the first call and three retries');
      // The run says whether trying again may help, as @vertesia/workflow reads it.
      assert.equal(spent.body.run.error.retryable, true);
      assert.equal((await srv.api('GET', `/api/v1/runs/${spent.body.run.id}`)).body.error.retryable, true);
      const budget = await srv.api('POST', '/api/v1/environments', {
        name: 'tight',
        provider: 'test',
        default_model: 'echo',
        config: { retries: { max_time_ms: 500 } },
      });
      const tight = await srv.api('POST', '/api/v1/runs', {
        interaction: await interaction(budget.body.id),
        config: { model: 'rate_limit:1:5000' },
      });
      assert.equal(tight.status, 502);
      assert.equal(tight.body.error, 'provider_rate_limited');
      assert.equal(tight.body.run.attempts, undefined, 'one attempt: waiting 5 s would pass the 500 ms budget');
      assert.equal(tight.body.run.error.retryable, true);
      assert.equal(tight.body.run.error.retry_after_ms, 5000);
      const error = await run('error');
      assert.equal(error.status, 502);
      assert.equal(error.body.run.attempts, undefined);
      assert.equal(error.body.run.error.retryable, false);
      const none = await srv.api('POST', '/api/v1/environments', {
        name: 'no retries',
        provider: 'test',
        default_model: 'echo',
        config: { retries: 0 },
      });
      assert.equal(
        (
          await srv.api('POST', '/api/v1/runs', {
            interaction: await interaction(none.body.id),
            config: { model: 'flaky:1' },
          })
        ).status,
        502,
      );
    });

    it('retries a stream that failed before its first chunk, never one that had sent a chunk', async () => {
      const retried = await stream('flaky:1');
      assert.equal(retried.final.status, 'completed');
      assert.equal(retried.chunks.join(''), retried.final.result[0].value);
      assert.equal(retried.final.attempts.length, 2);
      const broken = await stream('error_mid_stream:2');
      assert.equal(broken.final.status, 'failed');
      assert.equal(broken.final.error.code, 'provider_error');
      assert.equal(broken.chunks.length, 2);
      assert.equal(broken.final.attempts, undefined, 'not retried after chunks reached the subscriber');
      const stalled = await stream('stall:1');
      assert.equal(stalled.final.status, 'failed');
      assert.equal(stalled.final.error.code, 'provider_unreachable');
      assert.match(stalled.final.error.message, /stopped sending within 300 ms/);
    });

    it('retries a real provider that answers 429 with retry-after, and 503 with x-ms-retry-after-ms', async () => {
      const wireEnv = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'wire',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          default_model: 'm',
          config: { retries: { base_delay_ms: 5 } },
        })
      ).body.id;
      wire.options.fail = {
        status: 429,
        message: 'Rate limit reached',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after': '1' },
        times: 1,
      };
      const before = wire.requests.length;
      const started = Date.now();
      const r = await srv.api('POST', '/api/v1/runs', { interaction: await interaction(wireEnv) });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result[0].value, 'wire answer');
      assert.equal(wire.requests.length - before, 2);
      assert.ok(Date.now() - started >= 1000, 'retry-after: 1 second');
      assert.match(r.body.attempts[0].error.message, /429: Rate limit reached/);
      wire.options.fail = { status: 503, message: 'Overloaded', headers: { 'x-ms-retry-after-ms': '50' }, times: 2 };
      const again = await srv.api('POST', '/api/v1/runs', { interaction: await interaction(wireEnv) });
      assert.equal(again.body.status, 'completed');
      assert.equal(again.body.attempts.length, 3);
      wire.options.fail = undefined;
    });
  });
}
