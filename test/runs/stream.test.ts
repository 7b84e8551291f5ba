import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { openStream } from '../support/sse.ts';
import { nowIso } from '../../src/db/ids.ts';
import { getRun, updateRun } from '../../src/runs/store.ts';

const WORDS = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: streaming runs over SSE`, () => {
    let srv: TestServer;
    let fast: Awaited<ReturnType<typeof seedEcho>>;
    let slow: Awaited<ReturnType<typeof seedEcho>>;
    before(async () => {
      srv = await startTestServer(dialect);
      fast = await seedEcho(srv);
      slow = await seedEcho(srv, { name: 'Slow echo', config: { chunk_delay_ms: 40 } });
    });
    after(() => srv.close());

    const createStreamed = async (ix = fast, text = WORDS) => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { text }, stream: true });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const streamUrl = (id: string, token = srv.adminKey) =>
      `${srv.url}/api/v1/runs/${id}/stream?access_token=${encodeURIComponent(token)}`;

    it('answers created at once, then streams JSON string chunks and a close event with the final run', async () => {
      const run = await createStreamed();
      assert.equal(run.status, 'created');
      assert.deepEqual(run.result, []);
      const stored = await srv.api('GET', `/api/v1/runs/${run.id}`);
      assert.equal(stored.body.status, 'created', 'nothing executes before a subscriber comes');

      const s = await openStream(streamUrl(run.id));
      assert.equal(s.res.status, 200);
      assert.match(s.res.headers.get('content-type')!, /^text\/event-stream/);
      assert.equal(s.res.headers.get('cache-control')?.includes('no-cache'), true);
      const events = await s.all();
      const messages = events.filter((e) => e.event === 'message');
      assert.ok(messages.length >= 2);
      messages.forEach((m, i) => assert.equal(m.id, String(i + 1)));
      const text = messages.map((m) => JSON.parse(m.data)).join('');
      assert.equal(text, `Say: ${WORDS}`);
      const close = events.at(-1)!;
      assert.equal(close.event, 'close');
      const final = JSON.parse(close.data);
      assert.equal(final.id, run.id);
      assert.equal(final.status, 'completed');
      assert.deepEqual(final.result, [{ type: 'text', value: text }]);
      assert.equal(final.chunks, messages.length);
    });

    it('accepts the Authorization header too, and refuses a missing token with 401', async () => {
      const run = await createStreamed();
      const anon = await fetch(`${srv.url}/api/v1/runs/${run.id}/stream`);
      assert.equal(anon.status, 401);
      assert.equal(((await anon.json()) as any).error, 'unauthorized');
      const s = await openStream(`${srv.url}/api/v1/runs/${run.id}/stream`, {
        authorization: `Bearer ${srv.adminKey}`,
      });
      const events = await s.all();
      assert.equal(events.at(-1)!.event, 'close');
    });

    it('sends close at once for a finished run, and 404 for an unknown one', async () => {
      const done = await srv.api('POST', '/api/v1/runs', { interaction: fast.interaction.id, data: { text: 'x' } });
      const s = await openStream(streamUrl(done.body.id));
      const events = await s.all();
      assert.equal(events.length, 1);
      assert.equal(events[0].event, 'close');
      assert.equal(JSON.parse(events[0].data).status, 'completed');
      const missing = await fetch(streamUrl('no-such-run'));
      assert.equal(missing.status, 404);
      assert.equal(((await missing.json()) as any).error, 'not_found');
    });

    it('replays chunks to a late subscriber and gives two subscribers the same stream', async () => {
      const run = await createStreamed(slow);
      const first = await openStream(streamUrl(run.id));
      const e1 = await first.next();
      const e2 = await first.next();
      assert.equal(e1?.id, '1');
      assert.equal(e2?.id, '2');
      const second = await openStream(streamUrl(run.id));
      const [rest1, all2] = await Promise.all([first.all(), second.all()]);
      const text1 = [e1!, e2!, ...rest1]
        .filter((e) => e.event === 'message')
        .map((e) => JSON.parse(e.data))
        .join('');
      const text2 = all2
        .filter((e) => e.event === 'message')
        .map((e) => JSON.parse(e.data))
        .join('');
      assert.equal(text1, `Say: ${WORDS}`);
      assert.equal(text2, text1, 'the late subscriber got the replay, then the live chunks');
      assert.equal(all2.filter((e) => e.event === 'message')[0].id, '1');
    });

    it('resumes after Last-Event-ID, and a disconnect does not stop the run', async () => {
      const run = await createStreamed(slow);
      const s = await openStream(streamUrl(run.id));
      const got = [await s.next(), await s.next(), await s.next()];
      s.close();
      const resumed = await openStream(streamUrl(run.id), { 'last-event-id': got[2]!.id! });
      const events = await resumed.all();
      const messages = events.filter((e) => e.event === 'message');
      if (messages.length) assert.equal(messages[0].id, '4', 'resumes right after the last event seen');
      const close = JSON.parse(events.at(-1)!.data);
      assert.equal(close.status, 'completed');
      const text = [...got, ...messages].map((e) => JSON.parse(e!.data)).join('');
      assert.equal(text, `Say: ${WORDS}`);

      const abandoned = await createStreamed(slow);
      const gone = await openStream(streamUrl(abandoned.id));
      await gone.next();
      gone.close();
      let status = 'processing';
      for (let i = 0; i < 100 && status === 'processing'; i++) {
        await sleep(50);
        status = (await srv.api('GET', `/api/v1/runs/${abandoned.id}`)).body.status;
      }
      assert.equal(status, 'completed');
      const final = await srv.api('GET', `/api/v1/runs/${abandoned.id}`);
      assert.equal(final.body.result[0].value, `Say: ${WORDS}`);
    });

    it('streams a failing run to a close event with status failed', async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: fast.interaction.id,
        data: { text: 'x' },
        stream: true,
        config: { model: 'error' },
      });
      const events = await (await openStream(streamUrl(r.body.id))).all();
      const final = JSON.parse(events.at(-1)!.data);
      assert.equal(events.at(-1)!.event, 'close');
      assert.equal(final.status, 'failed');
      assert.equal(final.error.code, 'provider_error');
    });

    it('fails a streamed run that nobody streams in time with stream_not_consumed', async () => {
      const quick = await startTestServer(dialect, { streamTimeoutSeconds: 1 });
      try {
        const s = await seedEcho(quick);
        const r = await quick.api('POST', '/api/v1/runs', {
          interaction: s.interaction.id,
          data: { text: 'x' },
          stream: true,
        });
        await sleep(1100);
        assert.equal(await quick.orrery.services.runs.sweepUnconsumed(), 1);
        const got = await quick.api('GET', `/api/v1/runs/${r.body.id}`);
        assert.equal(got.body.status, 'failed');
        assert.equal(got.body.error.code, 'stream_not_consumed');
        const events = await (
          await openStream(`${quick.url}/api/v1/runs/${r.body.id}/stream?access_token=${quick.adminKey}`)
        ).all();
        assert.equal(JSON.parse(events.at(-1)!.data).status, 'failed');
      } finally {
        await quick.close();
      }
    });

    it("keeps the stored state of a run that left created before its stream's claim was written", async () => {
      const run = await createStreamed();
      // As sweepUnconsumed does, up to the moment it would forget the run's plan: the row failed,
      // the plan still held here, so the stream starts from it.
      const { db, dialect: d } = srv.orrery.database;
      const stored = (await getRun(
        db,
        d,
        { account: srv.orrery.bootstrap.account.id, project: srv.orrery.bootstrap.project.id },
        run.id,
      ))!;
      const error = { code: 'stream_not_consumed', message: 'failed elsewhere first' };
      assert.equal(
        await updateRun(
          db,
          d,
          run.id,
          { status: 'failed', updated_at: nowIso(), doc: { ...(stored.doc as object), error } },
          'created',
        ),
        true,
      );

      const events = await (await openStream(streamUrl(run.id))).all();
      const final = JSON.parse(events.at(-1)!.data);
      assert.equal(events.at(-1)!.event, 'close');
      assert.equal(final.status, 'failed');
      assert.equal(final.error.code, 'stream_not_consumed');
      // The execution's outcome never overwrote it, and no claim moved it.
      await sleep(50);
      const got = await srv.api('GET', `/api/v1/runs/${run.id}`);
      assert.equal(got.body.status, 'failed');
      assert.equal(got.body.error.message, 'failed elsewhere first');
      assert.deepEqual(got.body.result, []);
    });

    it("answers 404 to another project's key for a run this process holds to start, and starts it for its own", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Other streams project' });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other streams', project: project.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const run = await createStreamed();
      const foreign = await fetch(streamUrl(run.id, key.body.value));
      assert.equal(foreign.status, 404);
      assert.equal(((await foreign.json()) as any).error, 'not_found');
      const stored = await srv.api('GET', `/api/v1/runs/${run.id}`);
      assert.equal(stored.body.status, 'created', 'the refused subscriber started nothing');
      const events = await (await openStream(streamUrl(run.id))).all();
      assert.equal(JSON.parse(events.at(-1)!.data).status, 'completed');
    });
  });
}
