/** requestSlot (POST /execute/rate-limit/request): answered from the key's and the project's limits. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

/** Per-minute windows: start only with a few seconds of the current minute left. */
async function freshMinute(needMs = 8000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: requestSlot`, () => {
    let srv: TestServer;
    let env: string;
    before(async () => {
      srv = await startTestServer(dialect);
      env = (await seedEcho(srv, { name: 'SlotEcho' })).env.id;
    });
    after(() => srv.close());

    it('answers delay_ms 0 while the limits have room, without counting the asking; the wait to the next window once they are used', async () => {
      const k = await srv.api('POST', '/api/v1/apikeys', {
        name: 'three a minute',
        role: 'developer',
        limits: { requests_per_minute: 3 },
      });
      assert.equal(k.status, 200, JSON.stringify(k.body));
      const client = srv.client(k.body.value);
      await freshMinute();
      for (let i = 0; i < 4; i++)
        assert.deepEqual(
          await client.interactions.requestSlot({ interaction: 'SlotEcho', environment_id: env, model_id: 'echo' }),
          { delay_ms: 0 },
          'asking for a slot is not a request counted against the limit',
        );
      // The client's exchange of its key for a token was one request; two runs make three.
      for (let i = 0; i < 2; i++) {
        const r = await srv.api(
          'POST',
          '/api/v1/execute',
          { interaction: 'SlotEcho', data: { text: 'x' } },
          k.body.value,
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      const { delay_ms } = await client.interactions.requestSlot({ interaction: 'SlotEcho', rate_limit_id: 'r1' });
      const left = 60_000 - (Date.now() % 60_000);
      assert.ok(delay_ms > 0 && delay_ms <= 60_000, `waits for the next minute: ${delay_ms}`);
      assert.ok(Math.abs(delay_ms - left) < 5000, `until the minute turns (${delay_ms} vs ${left})`);
      // Another key of the project has no limit of its own: it may go now.
      assert.deepEqual(await srv.client().interactions.requestSlot({ interaction: 'SlotEcho' }), { delay_ms: 0 });
    });

    it('refuses what names nothing or is not a field, with a 4xx', async () => {
      const ask = (body: unknown, token?: string) => srv.api('POST', '/api/v1/execute/rate-limit/request', body, token);
      assert.equal((await ask({ interaction: 'Nope' })).status, 404);
      assert.equal((await ask({ interaction: 'SlotEcho', environment_id: 'nope' })).status, 404);
      const extra = await ask({ interaction: 'SlotEcho', priority: 1 });
      assert.equal(extra.status, 400);
      assert.match(extra.body.message, /priority/);
      assert.equal((await ask({})).status, 400);
      assert.equal((await ask({ interaction: 'SlotEcho', model_id: 'x'.repeat(201) })).status, 400);
      const reader = (await srv.api('POST', '/api/v1/apikeys', { name: 'r', role: 'reader' })).body.value;
      assert.equal((await ask({ interaction: 'SlotEcho' }, reader)).status, 403);
      const project = (await srv.api('POST', '/api/v1/projects', { name: 'Slot elsewhere' })).body.id;
      const other = (await srv.api('POST', '/api/v1/apikeys', { name: 'o', project })).body.value;
      assert.equal((await ask({ interaction: 'SlotEcho' }, other)).status, 404, "another project's interaction");
    });
  });
}
