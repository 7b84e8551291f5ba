/**
 * Which replicas count as alive. A replica that stopped beating is dead early enough that the
 * lost-run sweep, run every beat, fails its runs (and closes their followers) within
 * ORRERY_REPLICA_TIMEOUT; a replica of this host whose process is gone is dead at once.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { spawnSync } from 'node:child_process';
import { newId } from '../../src/db/ids.ts';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const namespace = readlinkSync('/proc/self/ns/pid');

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: replicas alive`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, { replicaTimeoutSeconds: 30 });
    });
    after(() => srv.close());

    async function replicaRow(host: string, beatMsAgo: number, process: string | null = null): Promise<string> {
      const id = newId();
      await srv.orrery.database.db
        .insertInto('replicas')
        .values({ id, host, process, started_at: ago(beatMsAgo), heartbeat_at: ago(beatMsAgo) })
        .execute();
      return id;
    }

    it('declares a silent replica dead in time for a sweep every beat to end its runs within the timeout', async () => {
      const registry = srv.orrery.replica;
      assert.ok(registry.deadAfterMs + registry.heartbeatMs < 30_000, 'dead, and swept, before the timeout');
      const missedTwo = await replicaRow('elsewhere', registry.heartbeatMs * 3);
      const silent = await replicaRow('elsewhere', registry.deadAfterMs + 500);
      const alive = await registry.alive();
      assert.ok(alive.has(missedTwo), 'two missed beats are not death');
      assert.ok(!alive.has(silent), 'silent past deadAfterMs');
      assert.ok(alive.has(registry.id));
    });

    it('declares a replica of this host dead at once when its process has ended', async () => {
      const ended = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8',
      });
      const deadPid = Number(ended.stdout);
      const gone = await replicaRow(hostname(), 0, `${namespace}/${deadPid}`);
      const running = await replicaRow(hostname(), 0, `${namespace}/${process.ppid}`);
      const otherNamespace = await replicaRow(hostname(), 0, `pid:[1]/${deadPid}`);
      const otherHost = await replicaRow(`not-${hostname()}`, 0, `${namespace}/${deadPid}`);
      const alive = await srv.orrery.replica.alive();
      assert.ok(!alive.has(gone), 'its process ended');
      assert.ok(alive.has(running), 'its process runs');
      assert.ok(alive.has(otherNamespace), 'a pid of another namespace says nothing here');
      assert.ok(alive.has(otherHost), 'a pid of another host says nothing here');
    });
  });
}
