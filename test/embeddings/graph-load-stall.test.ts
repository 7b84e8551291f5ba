/**
 * Loading a saved graph does not hold the event loop (issue 20): the usearch graph is loaded,
 * replayed and searched in its worker thread, so while a restarted server answers its first
 * similarity search (reading a saved graph of 12,000 vectors and replaying 4,000 writes made after
 * it) other requests keep being served. On the main thread the replay alone held the loop for
 * about a second (bench/README.md).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { TEST_DIALECTS } from '../support/server.ts';
import { upsertVectors, type VectorRow } from '../../src/embeddings/store.ts';
import { sleep } from './helpers.ts';
import {
  MODEL,
  createObject,
  graphEvents,
  nearest,
  searches,
  startNode,
  until,
  vector,
  type Node,
} from './graph-nodes.ts';

const SAVED = 12_000;
const REPLAYED = 4_000;

// SQLite only: what is checked is where the load runs (its worker thread, so the event loop keeps
// answering), which is the same on both databases; saving, loading and replaying a graph on each
// database is persisted-graphs.test.ts's. A second pass was over a minute of CPU (12,000 vectors
// built into a graph) checking nothing more.
if (TEST_DIALECTS.includes('sqlite'))
  describe('sqlite: a saved graph loads off the event loop', () => {
    let dataDir: string;
    let node: Node | undefined;

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'orrery-graph-stall-'));
    });
    after(async () => {
      await node?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it(
      'GET /health answers at once while a restarted server loads a saved graph and replays the writes after it',
      { timeout: 300_000 },
      async (t) => {
        node = await startNode(dataDir, undefined);
        const key = node.key;
        const first = await createObject(node, 0);
        const row = await node.orrery.database.db
          .selectFrom('objects')
          .select(['account_id', 'project_id'])
          .where('id', '=', first)
          .executeTakeFirstOrThrow();
        const scope = { account: row.account_id, project: row.project_id };
        // Vectors straight into the table (as the embedder writes them): many, quickly.
        const write = async (from: number, to: number) => {
          for (let i = from; i < to; i += 1000) {
            const rows: VectorRow[] = Array.from({ length: Math.min(1000, to - i) }, (_, j) => ({
              ownerKind: 'object',
              ownerId: `bulk${i + j}`,
              type: 'text',
              model: MODEL,
              etag: 'e',
              vector: Float32Array.from(vector(i + j)),
            }));
            await upsertVectors(node!.orrery.database.db, scope, rows);
          }
        };
        await write(0, SAVED);
        await nearest(node, vector(1));
        await until('the graph to be saved', async () => (await graphEvents(node!, 'saved')) >= 1, 240_000);
        await write(SAVED, SAVED + REPLAYED);
        await node.close();
        node = await startNode(dataDir, undefined, {}, key);
        const n = node;
        // A client polling /health while the first search loads the graph: the longest wait between
        // two answers (the poller shares this process's event loop, so a held loop shows as a gap).
        let longest = 0;
        let polls = 0;
        let polling = true;
        const poller = (async () => {
          let last = performance.now();
          while (polling) {
            assert.equal((await fetch(`${n.url}/health`)).status, 200);
            const now = performance.now();
            longest = Math.max(longest, now - last);
            last = now;
            polls++;
            await sleep(5);
          }
        })();
        await sleep(50);
        const loop = monitorEventLoopDelay({ resolution: 5 });
        loop.enable();
        const t0 = performance.now();
        const pollsBefore = polls;
        // The vector of the one real object: found in the graph's first answer (the bulk owners are not objects).
        assert.equal((await nearest(n, vector(0)))?.id, first);
        const took = performance.now() - t0;
        const pollsDuring = polls - pollsBefore;
        loop.disable();
        polling = false;
        await poller;
        const stall = loop.max / 1e6;
        const seen = `first search ${took.toFixed(0)} ms, ${pollsDuring} /health answers meanwhile, longest gap between them ${longest.toFixed(0)} ms, longest event-loop stall ${stall.toFixed(0)} ms`;
        t.diagnostic(seen);
        assert.equal(await graphEvents(n, 'loaded'), 1, 'the saved graph was loaded');
        assert.equal(await graphEvents(n, 'built'), 0, 'not built again');
        // (The bulk owners are not objects, so the search path widens past the graph to a scan; its first round asked the graph.)
        assert.ok((await searches(n, 'hnsw')) >= 1, 'the graph answered');
        // The load replayed 4,000 insertions: on the main thread that was one stall through which
        // /health could not answer at all. Off it, the poller kept being answered meanwhile. (The
        // stall's size is measured by `npm run bench -- embeddings` with MODE=restart.)
        assert.ok(pollsDuring >= 5, `/health kept answering while the graph loaded: ${seen}`);
      },
    );
  });
