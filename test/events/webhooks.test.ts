/**
 * Webhooks: event subscriptions through the official client, deliveries to a loopback receiver
 * that verifies each Standard Webhooks signature itself, once per event (the same webhook-id on
 * every retry), retried with backoff, recorded, surviving a restart; notify_endpoints of async
 * runs; bad input and another project's reach refused.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { Receiver } from './receiver.ts';

const FAST = { webhookRetryBaseMs: 20, webhookMaxAttempts: 3 };

const subscription = (url: string, filter: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  name: 'run events',
  filter,
  target: { type: 'webhook', url, signing_mode: 'signed' },
  run_as_role: 'automation',
  ...extra,
});

/** The deliveries of an event once none is pending. */
async function settled(srv: TestServer, eventId: string, count: number, token = srv.adminKey) {
  for (;;) {
    const r = await srv.api(
      'GET',
      `/api/v1/events/deliveries?event_id=${encodeURIComponent(eventId)}`,
      undefined,
      token,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (r.body.length >= count && r.body.every((d: { status: string }) => d.status !== 'pending')) return r.body;
    await sleep(30);
  }
}

async function runAsync(srv: TestServer, extra: Record<string, unknown> = {}) {
  const { runId } = await srv.client().interactions.executeAsync({
    type: 'interaction',
    interaction: 'HookEcho',
    data: { text: 'hook' },
    ...extra,
  } as never);
  for (;;) {
    const run = (await srv.api('GET', `/api/v1/runs/${runId}`)).body;
    if (run.status === 'completed' || run.status === 'failed') return run;
    await sleep(30);
  }
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: webhooks`, () => {
    let srv: TestServer;
    let rx: Receiver;
    before(async () => {
      rx = await new Receiver().start();
      srv = await startTestServer(dialect, FAST);
      await seedEcho(srv, { name: 'HookEcho' });
    });
    after(async () => {
      await srv.close();
      await rx.close();
    });

    it('creates, lists, retrieves, updates and deletes subscriptions through the official client; the secret only at creation and rotation', async () => {
      const subs = srv.client().store.events.subscriptions;
      const created = await subs.create(subscription(`${rx.url}/crud`, { event_category: ['*'] }) as never);
      assert.match(created.webhook_signing_secret!, /^whsec_[A-Za-z0-9+/]+=*$/);
      const s = created.subscription;
      assert.equal(s.name, 'run events');
      assert.equal(s.scope, 'project');
      assert.equal(s.enabled, true);
      assert.deepEqual(s.target, {
        type: 'webhook',
        url: `${rx.url}/crud`,
        has_secret: true,
        signing_mode: 'signed',
        payload_mode: 'event_envelope',
      });
      const read = await subs.retrieve(s.id);
      assert.deepEqual(read, s);
      assert.ok(!JSON.stringify(await subs.list()).includes('whsec_'), 'no list shows a secret');
      assert.ok((await subs.list()).some((x) => x.id === s.id));
      assert.deepEqual(await subs.list({ target_type: ['workflow'] }), []);
      // A read target sent back (has_secret included) with one field changed, as Vertesia's console does.
      const renamed = await subs.update(s.id, { name: 'renamed', enabled: false, target: read.target } as never);
      assert.equal(renamed.subscription.name, 'renamed');
      assert.equal(renamed.subscription.enabled, false);
      assert.equal(renamed.webhook_signing_secret, undefined);
      assert.ok((await subs.list({ enabled: false })).some((x) => x.id === s.id));
      const rotated = await subs.update(s.id, {
        target: { type: 'webhook', url: `${rx.url}/crud`, rotate_signing_secret: true },
      } as never);
      assert.ok(rotated.webhook_signing_secret && rotated.webhook_signing_secret !== created.webhook_signing_secret);
      assert.deepEqual(await subs.delete(s.id), { count: 1 });
      assert.equal((await srv.api('GET', `/api/v1/events/subscriptions/${s.id}`)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/events/subscriptions/${s.id}`)).status, 404);
    });

    it('delivers each matching event once with a valid signature, and only to the subscriptions whose filter takes it', async () => {
      const subs = srv.client().store.events.subscriptions;
      const made = await Promise.all(
        [
          ['/completed', { event_category: ['workflow'], action: ['completed'], resource_type: ['interaction_run'] }],
          ['/all', { event_category: ['*'] }],
          ['/failed', { action: ['failed'] }],
          ['/content', { event_category: ['content'] }],
        ].map(async (pair) => {
          const [path, filter] = pair as [string, Record<string, unknown>];
          const r = await subs.create(subscription(rx.url + path, filter as never) as never);
          rx.secrets.set(path as string, r.webhook_signing_secret!);
          return r.subscription.id;
        }),
      );
      const run = await runAsync(srv);
      assert.equal(run.status, 'completed');
      const eventId = `run.completed.${run.id}`;
      const deliveries = await settled(srv, eventId, 2);
      assert.deepEqual(
        deliveries.map((d: { subscription_id: string }) => d.subscription_id).sort(),
        [made[0], made[1]].sort(),
        'the failed-only and content-only subscriptions got no delivery',
      );
      for (const d of deliveries) {
        assert.equal(d.status, 'delivered');
        assert.equal(d.attempts, 1);
        assert.equal(d.response_status, 204);
      }
      const got = rx.received.filter((r) => r.body.event?.event_id === eventId);
      assert.equal(got.length, 2);
      for (const r of got) {
        assert.ok(r.verified, `the signature of ${r.path} verifies`);
        assert.ok(Math.abs(r.timestamp - Date.now() / 1000) < 600, 'webhook-timestamp is in seconds');
        assert.equal(r.body.event.event_category, 'workflow');
        assert.equal(r.body.event.action, 'completed');
        assert.equal(r.body.event.resource_type, 'interaction_run');
        assert.equal(r.body.event.resource_id, run.id);
        assert.equal(r.body.event.project_id, run.project.id);
        assert.ok(
          deliveries.some((d: { id: string }) => d.id === r.id),
          'webhook-id is the delivery id',
        );
      }
      // A signature checked with another subscription's secret fails: each is signed with its own.
      const [a, b] = got;
      const { verify } = await import('./receiver.ts');
      assert.equal(
        verify(rx.secrets.get(b!.path)!, a!.id, String(a!.timestamp), a!.raw, `v1,${'A'.repeat(44)}`),
        false,
      );
      for (const id of made) await subs.delete(id);
    });

    it('retries a failing receiver with backoff under the same webhook-id, and records a delivery that never succeeds as failed', async () => {
      const subs = srv.client().store.events.subscriptions;
      const r = await subs.create(subscription(`${rx.url}/retry`) as never);
      rx.secrets.set('/retry', r.webhook_signing_secret!);
      rx.failFirst = 2;
      try {
        const run = await runAsync(srv);
        const [d] = await settled(srv, `run.completed.${run.id}`, 1);
        assert.equal(d.status, 'delivered');
        assert.equal(d.attempts, 3);
        assert.equal(rx.triesOf(d.id), 3, 'two failed tries and the one that succeeded, all with its id');
        assert.equal(rx.received.filter((x) => x.id === d.id).length, 1);
        assert.ok(rx.received.find((x) => x.id === d.id)!.verified);

        rx.failFirst = 100;
        const again = await runAsync(srv);
        const [failed] = await settled(srv, `run.completed.${again.id}`, 1);
        assert.equal(failed.status, 'failed');
        assert.equal(failed.attempts, 3, 'ORRERY_WEBHOOK_ATTEMPTS');
        assert.equal(failed.response_status, 500);
        assert.match(failed.last_error, /answered 500/);
      } finally {
        rx.failFirst = 0;
        await subs.delete(r.subscription.id);
      }
    });

    it('calls notify_endpoints once with the final run, signed with the project notify secret', async () => {
      const secret = (await srv.api('GET', '/api/v1/events/notify-secret')).body.webhook_signing_secret;
      assert.match(secret, /^whsec_/);
      rx.secrets.set('/notify', secret);
      const run = await runAsync(srv, { notify_endpoints: [`${rx.url}/notify`, `${rx.url}/notify`] });
      const deliveries = await settled(srv, `run.completed.${run.id}`, 1);
      assert.equal(deliveries.length, 1, 'one delivery per endpoint, a repeated URL once');
      assert.equal(deliveries[0].subscription_id, null);
      const got = rx.received.filter((r) => r.path === '/notify' && r.body.runId === run.id);
      assert.equal(got.length, 1);
      assert.ok(got[0]!.verified);
      assert.equal(got[0]!.body.workflowId, run.id);
      assert.equal(got[0]!.body.status, 'completed');
      assert.deepEqual(got[0]!.body.result, [{ type: 'text', value: 'Say: hook' }]);
      assert.equal(got[0]!.body.run.id, run.id);
    });

    it('refuses bad subscriptions by name with a 4xx, and keeps other projects out', async () => {
      const url = `${rx.url}/bad`;
      const cases: Array<[unknown, number, RegExp]> = [
        [{ ...subscription(url), color: 'red' }, 400, /color is not a field/],
        [{ ...subscription(url), scope: 'account' }, 400, /scope "account" is not supported/],
        [{ ...subscription(url), target: { type: 'workflow', url } }, 400, /target.type "workflow"/],
        [{ ...subscription(url), target: { type: 'webhook', url, signing_mode: 'legacy_unsigned' } }, 400, /signed/],
        [
          { ...subscription(url), target: { type: 'webhook', url, payload_mode: 'workflow_notification' } },
          400,
          /payload_mode/,
        ],
        [
          { ...subscription(url), target: { type: 'webhook', url, headers: { a: 'b' } } },
          400,
          /headers is not a field/,
        ],
        [{ ...subscription(url), target: { type: 'webhook', url: 'ftp://x/y' } }, 400, /http or https/],
        [{ ...subscription(url), target: { type: 'webhook', url: 'http://u:p@127.0.0.1/' } }, 400, /credentials/],
        [{ ...subscription(url), target: { type: 'webhook', url: 'nope' } }, 400, /not a URL/],
        [{ ...subscription(url), filter: { condition: { '==': [1, 1] } } }, 400, /filter.condition is not supported/],
        [{ ...subscription(url), filter: { event_category: ['weather'] } }, 400, /event_category/],
        [{ ...subscription(url), run_as_role: 'wizard' }, 400, /run_as_role "wizard"/],
        [{ ...subscription(url), priority: 'high' }, 400, /priority "high"/],
        [{ ...subscription(url), name: '' }, 400, /name/],
        [{ filter: {}, target: { type: 'webhook', url }, run_as_role: 'automation' }, 400, /name/],
      ];
      for (const [body, status, message] of cases) {
        const r = await srv.api('POST', '/api/v1/events/subscriptions', body);
        assert.equal(r.status, status, JSON.stringify([body, r.body]));
        assert.match(r.body.message, message, JSON.stringify(body));
      }
      // A developer key may subscribe as automation, not as an owner (it reads more than the key may).
      const dev = (await srv.api('POST', '/api/v1/apikeys', { name: 'dev', role: 'developer' })).body.value;
      assert.equal((await srv.api('POST', '/api/v1/events/subscriptions', subscription(url), dev)).status, 200);
      const owner = await srv.api(
        'POST',
        '/api/v1/events/subscriptions',
        { ...subscription(url), run_as_role: 'owner' },
        dev,
      );
      assert.equal(owner.status, 403);
      assert.match(owner.body.message, /run_as_role owner/);
      const reader = (await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' })).body.value;
      assert.equal((await srv.api('POST', '/api/v1/events/subscriptions', subscription(url), reader)).status, 403);
      assert.equal((await srv.api('GET', '/api/v1/events/notify-secret', undefined, reader)).status, 403);

      const mine = (await srv.api('POST', '/api/v1/events/subscriptions', subscription(url))).body.subscription.id;
      const project = (await srv.api('POST', '/api/v1/projects', { name: 'Hooks elsewhere' })).body.id;
      const other = (await srv.api('POST', '/api/v1/apikeys', { name: 'other', project })).body.value;
      assert.equal((await srv.api('GET', `/api/v1/events/subscriptions/${mine}`, undefined, other)).status, 404);
      assert.equal((await srv.api('PUT', `/api/v1/events/subscriptions/${mine}`, { name: 'x' }, other)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/events/subscriptions/${mine}`, undefined, other)).status, 404);
      assert.deepEqual((await srv.api('GET', '/api/v1/events/subscriptions', undefined, other)).body, []);
      assert.deepEqual((await srv.api('GET', '/api/v1/events/deliveries', undefined, other)).body, []);
      const theirs = (await srv.api('GET', '/api/v1/events/notify-secret', undefined, other)).body
        .webhook_signing_secret;
      const ours = (await srv.api('GET', '/api/v1/events/notify-secret')).body.webhook_signing_secret;
      assert.notEqual(theirs, ours, 'each project signs its notifications with its own secret');
      assert.equal((await srv.api('GET', '/api/v1/events/deliveries?limit=5000')).status, 400);
      assert.equal((await srv.api('GET', '/api/v1/events/subscriptions?colour=red')).status, 400);
      for (const s of (await srv.api('GET', '/api/v1/events/subscriptions')).body)
        await srv.api('DELETE', `/api/v1/events/subscriptions/${s.id}`);
    });
  });

  describe(`${dialect}: webhooks and the egress policy`, () => {
    it('refuses a loopback receiver unless ORRERY_EGRESS allows it', async () => {
      const srv = await startTestServer(dialect, { egress: 'public' });
      try {
        const r = await srv.api('POST', '/api/v1/events/subscriptions', subscription('http://127.0.0.1:9/x'));
        assert.equal(r.status, 400);
        assert.match(r.body.message, /egress policy/);
      } finally {
        await srv.close();
      }
    });
  });

  describe(`${dialect}: webhook deliveries survive a restart`, () => {
    it('a delivery still failing when the server stops is delivered by the next one, once', async () => {
      const rx = await new Receiver().start();
      rx.failFirst = 1_000_000;
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-hooks-'));
      const adminKey = `sk-${'hookrestart'.repeat(2)}`;
      const first = await startTestServer(dialect, {
        ...FAST,
        webhookMaxAttempts: 20,
        webhookRetryBaseMs: 50,
        dataDir,
        adminKey,
      });
      let second: TestServer | undefined;
      try {
        await seedEcho(first, { name: 'HookEcho' });
        const r = await first.api('POST', '/api/v1/events/subscriptions', subscription(`${rx.url}/restart`));
        rx.secrets.set('/restart', r.body.webhook_signing_secret);
        const run = await runAsync(first);
        const eventId = `run.completed.${run.id}`;
        let d;
        do d = (await first.api('GET', `/api/v1/events/deliveries?event_id=${eventId}`)).body[0];
        while (!d || d.attempts < 1);
        await first.orrery.app.close();
        rx.failFirst = 0;
        second = await startTestServer(dialect, {
          ...FAST,
          dataDir,
          adminKey,
          ...(first.databaseUrl ? { databaseUrl: first.databaseUrl } : {}),
        });
        // The key exists already: the second server's bootstrap answers none, so it is named here.
        const [done] = await settled(second, eventId, 1, adminKey);
        assert.equal(done.status, 'delivered');
        assert.equal(done.id, d.id);
        const got = rx.received.filter((x) => x.id === d.id);
        assert.equal(got.length, 1);
        assert.ok(got[0]!.verified);
      } finally {
        await second?.close();
        await first.close().catch(() => {});
        await rx.close();
      }
    });
  });
}
