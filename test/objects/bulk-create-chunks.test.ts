/**
 * A bulk create of 1,000 objects (the most POST /operations takes) lets other work run while it
 * prepares and writes them: it yields to the event loop between chunks, and keeps its answer (the
 * valid payloads written, each invalid one answered by its index).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracingChannel } from 'node:diagnostics_channel';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';

const COUNT = 1000;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: bulk create of many objects`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv?.close());

    const create = (objects: unknown[]) =>
      srv.api('POST', '/api/v1/operations', { name: 'create', ids: [], params: { objects } });

    it('creates all 1,000 in order; a bad item (chunk 7) is answered by its index, the others are written', async () => {
      const objects = Array.from({ length: COUNT }, (_, i) => ({ name: `bulk ${i}`, location: '/bulk-order' }));
      const bad = 650; // in the seventh chunk of a hundred
      objects[bad] = { name: 42 } as never;
      const r = await create(objects);
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
      assert.equal(r.body.created, COUNT - 1);
      assert.equal(r.body.failed.length, 1);
      assert.equal(r.body.failed[0].index, bad);
      assert.match(r.body.failed[0].error, /name/);
      const indexes = r.body.objects.map((o: { index: number }) => o.index);
      assert.deepEqual(
        indexes,
        Array.from({ length: COUNT }, (_, i) => i).filter((i) => i !== bad),
      );
      // Each answered id is the object made of the payload at its index.
      for (const i of [0, 99, 100, 649, 651, 999]) {
        const o = r.body.objects.find((x: { index: number }) => x.index === i);
        const got = await srv.api('GET', `/api/v1/objects/${o.id}`);
        assert.equal(got.body.name, `bulk ${i}`);
      }
      const listed = await srv.api('GET', '/api/v1/objects?location=/bulk-order&limit=1000');
      assert.equal(listed.body.length, COUNT - 1);
    });

    it('lets the event loop turn between chunks while it prepares and writes them', async () => {
      const channel = tracingChannel('fastify.request.handler');
      let inHandler = false;
      let turns = 0;
      const spin = () => {
        if (!inHandler) return;
        turns++;
        setImmediate(spin);
      };
      const isBulk = (m: any) => m?.route?.url?.endsWith('/operations') && m?.route?.method === 'POST';
      const handlers = {
        start: (m: any) => {
          if (!isBulk(m)) return;
          inHandler = true;
          setImmediate(spin);
        },
        end: () => {},
        asyncStart: (m: any) => {
          if (isBulk(m)) inHandler = false;
        },
        asyncEnd: () => {},
        error: () => {},
      };
      channel.subscribe(handlers);
      try {
        const objects = Array.from({ length: COUNT }, (_, i) => ({ name: `turns ${i}`, location: '/bulk-turns' }));
        const r = await create(objects);
        assert.equal(r.status, 200);
        assert.equal(r.body.created, COUNT);
      } finally {
        channel.unsubscribe(handlers);
        inHandler = false;
      }
      // Ten chunks to prepare and ten to write: the loop turned between them, not once at the end.
      assert.ok(turns >= COUNT / 100, `the event loop turned ${turns} time(s) during the bulk create`);
    });
  });
}
