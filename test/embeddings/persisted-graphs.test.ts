/**
 * Persisted similarity graphs (issue 20): a built HNSW graph is saved (data folder, or the S3
 * blob store), a restarted server loads it instead of building (the `built` event count stays at
 * zero, `loaded` counts one, and queries are answered by the graph), the writes and deletions
 * made after the save are replayed onto it, and a corrupt or stale file is rebuilt. Two servers
 * on one PostgreSQL database share the build through a lease. Small graphs: the exact-scan
 * threshold is lowered so that 130 vectors use HNSW.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startS3, type TestS3 } from '../support/s3.ts';
import type { Config } from '../../src/config.ts';
import { openDatabase } from '../../src/db/open.ts';
import { acquireLease, leaseHolder, releaseLease } from '../../src/embeddings/graph-sql.ts';
import { sleep } from './helpers.ts';
import { N, createObject, graphEvents, nearest, searches, startNode, until, vector, type Node } from './graph-nodes.ts';

/** Creates N objects with vectors, queries once (loads the partition) and waits until its graph is saved. */
async function seedAndSave(n: Node): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < N; i += 10)
    ids.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => createObject(n, i + j)))));
  await nearest(n, vector(0));
  await until('the graph to be saved', async () => (await graphEvents(n, 'saved')) >= 1);
  return ids;
}

function graphFiles(dataDir: string): string[] {
  const root = join(dataDir, 'vector-graphs');
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
  return walk(root).filter((f) => f.endsWith('.graph'));
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: persisted similarity graphs`, () => {
    let dataDir: string;
    let pgdb: { url: string; drop: () => Promise<void> } | undefined;
    let node: Node | undefined;
    let adminKey: string;
    let ids: string[];

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'orrery-graphs-'));
      pgdb = dialect === 'postgres' ? await createPgDatabase() : undefined;
    });
    after(async () => {
      await node?.close();
      await pgdb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const restart = async (overrides: Partial<Config> = {}) => {
      await node?.close();
      node = await startNode(dataDir, pgdb?.url, overrides, adminKey);
      return node;
    };

    it('a built graph is saved; after a restart it is loaded, not built, and answers with the writes and deletions made after the save', async () => {
      node = await startNode(dataDir, pgdb?.url);
      adminKey = node.key;
      ids = await seedAndSave(node);
      assert.equal(await graphEvents(node, 'built'), 1);
      assert.equal(graphFiles(dataDir).length, 1);
      // After the save: a new object, a deletion, and a changed vector.
      const added = await createObject(node, 1000);
      assert.equal((await node.api('DELETE', `/api/v1/objects/${ids[3]}`)).status, 200);
      assert.equal(
        (await node.api('PUT', `/api/v1/objects/${ids[5]}/embeddings/text`, { values: vector(2000) })).status,
        200,
      );

      const n = await restart();
      assert.equal(await graphEvents(n, 'built'), 0);
      const found = await nearest(n, vector(1000));
      assert.equal(found?.id, added, 'a vector written after the save is found');
      assert.equal(await graphEvents(n, 'loaded'), 1, 'the saved graph was loaded');
      assert.equal(await graphEvents(n, 'built'), 0, 'and not built again');
      assert.equal(await graphEvents(n, 'rejected'), 0);
      assert.notEqual((await nearest(n, vector(3)))?.id, ids[3], 'a deleted object is not answered');
      assert.equal((await nearest(n, vector(2000)))?.id, ids[5], 'a changed vector is found by its new value');
      assert.notEqual((await nearest(n, vector(5)))?.id, ids[5]);
      assert.equal((await nearest(n, vector(7)))?.id, ids[7]);
      assert.equal(await searches(n, 'exact'), 0, 'every query was answered by the graph');
      assert.ok((await searches(n, 'hnsw')) >= 5, `hnsw searches ${await searches(n, 'hnsw')}`);
      // Still kept current by writes made now.
      const later = await createObject(n, 3000);
      assert.equal((await nearest(n, vector(3000)))?.id, later);
    });

    it('a corrupt saved graph is rejected and rebuilt; answers stay right meanwhile', async () => {
      await node!.close();
      node = undefined;
      const [file] = graphFiles(dataDir);
      const bytes = readFileSync(file);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      writeFileSync(file, bytes);
      const n = await restart();
      assert.equal((await nearest(n, vector(7)))?.id, ids[7]);
      assert.equal(await graphEvents(n, 'rejected'), 1);
      assert.equal(await graphEvents(n, 'loaded'), 0);
      await until('the rebuilt graph to be saved', async () => (await graphEvents(n, 'saved')) >= 1);
      assert.equal(await graphEvents(n, 'built'), 1);
      assert.equal((await nearest(n, vector(9)))?.id, ids[9]);
      assert.equal((await nearest(n, vector(1000)))?.id !== undefined, true);
    });

    it('a stale graph is rebuilt: another scalar kind, and one that no longer matches the table', async () => {
      // Another scalar kind: the header does not match the setting.
      let n = await restart({ vectorScalar: 'i8' });
      assert.equal((await nearest(n, vector(11)))?.id, ids[11]);
      assert.equal(await graphEvents(n, 'rejected'), 1);
      await until('the i8 graph to be saved', async () => (await graphEvents(n, 'saved')) >= 1);
      assert.equal((await nearest(n, vector(12)))?.id, ids[12], 'the i8 graph answers');
      assert.ok((await searches(n, 'hnsw')) >= 1);
      await n.close();
      node = undefined;
      // A vector deleted behind the graph's back, its tombstone lost: the counts differ after replay.
      const db = await openDatabase({ dataDir, databaseUrl: pgdb?.url });
      await db.db.deleteFrom('vectors').where('owner_id', '=', ids[13]).execute();
      await sql`DELETE FROM vector_tombstones`.execute(db.db);
      await db.db.destroy();
      n = await restart({ vectorScalar: 'i8' });
      assert.notEqual((await nearest(n, vector(13)))?.id, ids[13]);
      assert.equal(await graphEvents(n, 'rejected'), 1);
      assert.equal(await graphEvents(n, 'loaded'), 0);
      assert.equal((await nearest(n, vector(14)))?.id, ids[14]);
    });

    it('the build lease: one holder at a time, taken over once expired', async () => {
      const db = node!.orrery.database.db;
      assert.equal(await acquireLease(db, 'p|object|text|m', 'a', 300), true);
      assert.equal(await acquireLease(db, 'p|object|text|m', 'b', 300), false);
      assert.equal(await acquireLease(db, 'p|object|text|m', 'a', 300), true, 'the holder renews');
      assert.equal(await leaseHolder(db, 'p|object|text|m'), 'a');
      await sleep(350);
      assert.equal(await leaseHolder(db, 'p|object|text|m'), null, 'expired');
      assert.equal(
        await acquireLease(db, 'p|object|text|m', 'b', 300),
        true,
        'a crashed holder does not block forever',
      );
      await releaseLease(db, 'p|object|text|m', 'b');
      assert.equal(await leaseHolder(db, 'p|object|text|m'), null);
    });
  });
}

for (const dialect of TEST_DIALECTS)
  describe(`${dialect}: saved graphs in the S3 blob store`, () => {
    let s3: TestS3;
    let pgdb: { url: string; drop: () => Promise<void> } | undefined;
    const dirs: string[] = [];
    const nodes: Node[] = [];

    before(async () => {
      s3 = await startS3('orrery-graphs');
      pgdb = dialect === 'postgres' ? await createPgDatabase() : undefined;
    });
    after(async () => {
      for (const n of nodes) await n.close().catch(() => {});
      await s3.close();
      await pgdb?.drop();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    const dir = () => {
      const d = mkdtempSync(join(tmpdir(), 'orrery-graphs-s3-'));
      dirs.push(d);
      return d;
    };

    it(`a restarted server or a new replica loads the graph saved in the bucket; two replicas build it once (lease)`, async () => {
      const first = await startNode(dir(), pgdb?.url ?? undefined, { blobUrl: s3.blobUrl });
      nodes.push(first);
      if (!pgdb) {
        // SQLite: one database file; the second "replica" is a restart on the same folder with S3 graphs.
        const ids = await seedAndSave(first);
        const added = await createObject(first, 1000);
        await first.close();
        nodes.pop();
        const home = dirs[0];
        const second = await startNode(home, undefined, { blobUrl: s3.blobUrl }, first.key);
        nodes.push(second);
        assert.equal((await nearest(second, vector(1000)))?.id, added);
        assert.equal((await nearest(second, vector(4)))?.id, ids[4]);
        assert.equal(await graphEvents(second, 'loaded'), 1);
        assert.equal(await graphEvents(second, 'built'), 0);
        return;
      }
      // PostgreSQL: two replicas (own data folders) on one database and one bucket, both needing
      // the same new graph at once: one takes the lease, builds and publishes; the other finds the
      // lease held, keeps answering exactly, and loads the published graph.
      const second = await startNode(dir(), pgdb.url, { blobUrl: s3.blobUrl }, first.key);
      nodes.push(second);
      const [a, b] = [first, second];
      const ids: string[] = [];
      for (let i = 0; i < N; i += 10)
        ids.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => createObject(a, i + j)))));
      const count = async () => ({
        built: (await graphEvents(a, 'built')) + (await graphEvents(b, 'built')),
        saved: (await graphEvents(a, 'saved')) + (await graphEvents(b, 'saved')),
        waited: (await graphEvents(a, 'lease_busy')) + (await graphEvents(b, 'lease_busy')),
        loaded: (await graphEvents(a, 'loaded')) + (await graphEvents(b, 'loaded')),
        hnsw: [await searches(a, 'hnsw'), await searches(b, 'hnsw')],
      });
      // Both load the partition and reach the threshold at once.
      await Promise.all([nearest(a, vector(1)), nearest(b, vector(2))]);
      await until('both replicas to answer from the graph', async () => {
        const r = await Promise.all([nearest(a, vector(3)), nearest(b, vector(4))]);
        const now = await count();
        return r[0]?.id === ids[3] && r[1]?.id === ids[4] && now.saved > 0 && now.hnsw[0] > 0 && now.hnsw[1] > 0;
      });
      const end = await count();
      assert.equal(end.built, 1, 'one replica built the graph');
      assert.equal(end.saved, 1, 'and published it');
      assert.equal(end.loaded, 1, 'the other loaded it');
      assert.ok(end.waited <= 1, 'after finding the lease held (or the graph already published)');
      // Kept current on both: a write on one is found on the other (NOTIFY), from the graph.
      const added = await createObject(a, 1000);
      await until('the other replica to see the write', async () => (await nearest(b, vector(1000)))?.id === added);
      assert.equal((await nearest(b, vector(9)))?.id, ids[9]);
    });
  });
