/**
 * The template workers are shared by every project and served fairly: a project flooding them
 * with jst templates that loop until their CPU bound waits behind itself, while another project's
 * template takes the thread kept free for others.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

/** Runs of the flooding project, each stopped at its 300 ms CPU bound. */
const FLOOD = 12;

// One database (ONE_DIALECT): the template workers do not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: template workers shared fairly by projects`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, { templateWorkers: 2, templateCpuMs: 300 });
    });
    after(() => srv.close());

    async function jstInteraction(token: string | undefined, content: string): Promise<string> {
      const { env } = await seedEcho(srv, { token });
      const r = await srv.api(
        'POST',
        '/api/v1/interactions',
        {
          name: 'jst',
          status: 'draft',
          environment: env.id,
          prompts: [{ type: 'template', template: { role: 'user', content_type: 'jst', content } }],
        },
        token,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id;
    }

    it("serves another project's template before the rest of one project's flood", async () => {
      const other = await srv.api('POST', '/api/v1/projects', { name: 'Neighbour' });
      const otherKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'neighbour', project: other.body.id })).body
        .value as string;
      const looping = await jstInteraction(undefined, 'while (true) {} return "never";');
      const trivial = await jstInteraction(otherKey, 'return "hello";');

      let floodDone = 0;
      const flood = Array.from({ length: FLOOD }, () =>
        srv.api('POST', '/api/v1/runs', { interaction: looping, data: {} }).then((r) => {
          floodDone++;
          return r;
        }),
      );
      // The whole flood is queued once its first run has ended.
      await Promise.race(flood);
      const neighbour = await srv.api('POST', '/api/v1/runs', { interaction: trivial, data: {} }, otherKey);
      const doneWhenNeighbourAnswered = floodDone;
      assert.equal(neighbour.status, 200, JSON.stringify(neighbour.body));
      assert.equal(neighbour.body.status, 'completed');
      const flooded = await Promise.all(flood);
      for (const r of flooded)
        assert.equal(r.body.run?.error?.code, 'template_timeout', JSON.stringify(r.body).slice(0, 300));
      // Served in turn, the neighbour waits for the flood's run in progress (and its own thread's
      // start), not for the flood: in one queue it came after all of it.
      assert.ok(
        doneWhenNeighbourAnswered < FLOOD / 2,
        `the neighbour waited for ${doneWhenNeighbourAnswered} of the flood's ${FLOOD} runs`,
      );
    });
  });
}
