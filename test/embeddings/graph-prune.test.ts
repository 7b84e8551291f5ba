/**
 * Saved graphs of partitions no longer configured are deleted (issue 20), in the data folder and
 * in the S3 blob store: a deleted project's at once, a disabled type's and a replaced model's when
 * the project's embedding settings change, and anything else (a project deleted while no replica
 * heard of it) by the periodic sweep. The graphs still configured stay.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startS3, type TestS3 } from '../support/s3.ts';
import type { BlobStore } from '../../src/blobs/blob-store.ts';
import { LocalBlobStore } from '../../src/blobs/local-store.ts';
import { parseS3Url, S3BlobStore } from '../../src/blobs/s3-store.ts';
import { graphKeyOf } from '../../src/embeddings/graph-prune.ts';
import { MODEL, N, createObject, graphEvents, nearest, startNode, until, vector, type Node } from './graph-nodes.ts';

async function keys(store: BlobStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const k of store.list(prefix)) if (k.endsWith('.graph')) out.push(k);
  return out.sort();
}

/** N objects with vectors in the project of `token`, one query, and its graph saved. */
async function seedGraph(n: Node, saved: number, token?: string): Promise<void> {
  for (let i = 0; i < N; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => createObject(n, i + j, token)));
  await nearest(n, vector(0), token);
  await until('the graph to be saved', async () => (await graphEvents(n, 'saved')) >= saved);
}

for (const dialect of TEST_DIALECTS) {
  for (const where of ['data folder', 'S3'] as const) {
    describe(`${dialect}: saved graphs no longer configured are pruned (${where})`, () => {
      let dataDir: string;
      let s3: TestS3 | undefined;
      let pgdb: { url: string; drop: () => Promise<void> } | undefined;
      let node: Node | undefined;

      before(async () => {
        dataDir = mkdtempSync(join(tmpdir(), 'orrery-graph-prune-'));
        s3 = where === 'S3' ? await startS3('orrery-graph-prune') : undefined;
        pgdb = dialect === 'postgres' ? await createPgDatabase() : undefined;
      });
      after(async () => {
        await node?.close();
        await s3?.close();
        await pgdb?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      });

      it('a deleted project, a disabled type and another model lose their graphs; the configured graphs stay', async () => {
        node = await startNode(dataDir, pgdb?.url, s3 ? { blobUrl: s3.blobUrl } : {});
        const n = node;
        // The store and key prefix the server saves graphs in (server.ts).
        const store: BlobStore = s3
          ? new S3BlobStore(parseS3Url(s3.blobUrl))
          : new LocalBlobStore(join(dataDir, 'vector-graphs'), { durable: false });
        const prefix = s3 ? 'vector-graphs/' : '';
        const home = n.orrery.bootstrap.project.id;
        const other = await n.api('POST', '/api/v1/projects', { name: 'other' });
        assert.equal(other.status, 200, JSON.stringify(other.body));
        const token = (await n.api('POST', '/api/v1/token/issue', { project: other.body.id })).body.token as string;
        await seedGraph(n, 1);
        await seedGraph(n, 2, token);
        const homeGraph = graphKeyOf(prefix, home, `${home}|object|text|${MODEL}`);
        const otherGraph = graphKeyOf(prefix, other.body.id, `${other.body.id}|object|text|${MODEL}`);
        assert.deepEqual(await keys(store, prefix), [homeGraph, otherGraph].sort());
        // Left behind: a graph of a model the project no longer uses, and one of a project deleted long ago.
        const oldModel = graphKeyOf(prefix, home, `${home}|object|text|an-old-model`);
        const gone = graphKeyOf(prefix, 'p-gone', 'p-gone|object|text|m');
        for (const k of [oldModel, gone]) await store.put(k, Readable.from([Buffer.from('a graph')]));

        // A deleted project: its graph goes at once, nothing else.
        const deleted = await n.api('DELETE', `/api/v1/projects/${other.body.id}`);
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        assert.deepEqual(await keys(store, prefix), [homeGraph, oldModel, gone].sort());
        assert.equal(await graphEvents(n, 'pruned'), 1);

        // The sweep (every few hours; at once here): a project nobody heard deleted, a model not configured.
        assert.equal(await n.orrery.services.embeddings.pruneGraphs(), 2);
        assert.deepEqual(await keys(store, prefix), [homeGraph]);
        assert.equal(await n.orrery.services.embeddings.pruneGraphs(), 0, 'the configured graph stays');
        assert.equal((await nearest(n, vector(5)))?.id !== undefined, true);

        // A type turned off: its graph goes with the settings change; turned on again, it is rebuilt.
        const off = await n.api('POST', '/api/v1/embeddings/text/disable');
        assert.equal(off.status, 200, JSON.stringify(off.body));
        assert.deepEqual(await keys(store, prefix), []);
        assert.equal(await graphEvents(n, 'pruned'), 4);
        const on = await n.api('POST', '/api/v1/embeddings/text/enable', { environment: 'builtin' });
        assert.equal(on.status, 200, JSON.stringify(on.body));
        await nearest(n, vector(6));
        await until('the graph to be saved again', async () => (await graphEvents(n, 'saved')) >= 3);
        assert.deepEqual(await keys(store, prefix), [homeGraph]);
      });
    });
  }
}
