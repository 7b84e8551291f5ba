/**
 * The official client's API keys, projects and account methods of issue 24: apikeys.retrieve and
 * update (a disabled key is refused with 401), projects.delete and updateConfiguration,
 * account.info and account.projects; through the client itself, with bad input and other
 * projects' data.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { VertesiaClient } from '@vertesia/client';
import { sql, type Kysely } from 'kysely';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { until } from '../support/processes.ts';

/** The HTTP status a client call fails with (200 when it succeeds). */
const statusOf = async (p: Promise<unknown>): Promise<number> => {
  try {
    await p;
  } catch (err) {
    return (err as { status?: number }).status ?? 0;
  }
  return 200;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the official client's apikeys, projects and account`, () => {
    let srv: TestServer;
    let client: VertesiaClient;
    let second: { id: string; name: string };
    let memberKey: { id: string; value: string };

    const newKey = async (body: Record<string, unknown>, token?: string) => {
      const r = await srv.api('POST', '/api/v1/apikeys', body, token);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { id: string; value: string; name: string };
    };

    before(async () => {
      srv = await startTestServer(dialect);
      client = srv.client();
      const p = await srv.api('POST', '/api/v1/projects', { name: 'Client surface' });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      second = p.body;
      memberKey = await newKey({ name: 'member of second', project: second.id });
    });
    after(() => srv.close());

    it('retrieves a key without its secret; withValue and unknown or hidden keys are refused', async () => {
      const key = await client.apikeys.retrieve(memberKey.id);
      assert.equal(key.id, memberKey.id);
      assert.equal(key.name, 'member of second');
      assert.equal(key.role as string, 'developer');
      assert.equal(key.enabled, true);
      assert.deepEqual(key.project, { id: second.id, name: 'Client surface' } as never);
      assert.equal((key as { value?: string }).value, undefined);
      const withValue = await srv.api('GET', `/api/v1/apikeys/${memberKey.id}?withValue=true`);
      assert.equal(withValue.status, 400);
      assert.match(withValue.body.message, /hashed/);
      assert.equal(await statusOf(client.apikeys.retrieve('no-such-key')), 404);
      // A member sees the keys of its own project only.
      const member = srv.client(memberKey.value);
      assert.equal((await member.apikeys.retrieve(memberKey.id)).id, memberKey.id);
      const adminKeys = await srv.api('GET', '/api/v1/apikeys');
      const adminKeyId = adminKeys.body.find((k: { project: { id: string } }) => k.project.id !== second.id).id;
      assert.equal(await statusOf(member.apikeys.retrieve(adminKeyId)), 404);
    });

    it('updates name, role and expires_at, and checks them', async () => {
      const key = await newKey({ name: 'to update', project: second.id });
      const expires = new Date(Date.now() + 86_400_000).toISOString();
      const updated = await client.apikeys.update(key.id, {
        name: 'renamed',
        role: 'admin' as never,
        expires_at: expires,
      } as never);
      assert.equal(updated.name, 'renamed');
      assert.equal(updated.role as string, 'admin');
      assert.equal(updated.expires_at, expires);
      const again = await client.apikeys.retrieve(key.id);
      assert.equal(again.name, 'renamed');
      assert.equal(again.role as string, 'admin');
      assert.equal(again.expires_at, expires);
      const cleared = await srv.api('PUT', `/api/v1/apikeys/${key.id}`, { expires_at: null, role: 'member' });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.body.expires_at, null);
      assert.equal(cleared.body.role, 'developer', 'member is accepted as the alias of developer');

      for (const [body, pattern] of [
        [{ expires_at: '2001-01-01T00:00:00Z' }, /future/],
        [{ expires_at: 'tomorrow' }, /ISO 8601/],
        [{ name: '' }, /name/],
        [{ name: '   ' }, /name/],
        [{ role: 'owner' }, /role/],
        [{ enabled: 'yes' }, /enabled/],
      ] as const) {
        const r = await srv.api('PUT', `/api/v1/apikeys/${key.id}`, body);
        assert.equal(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, pattern);
      }
      assert.equal((await srv.api('PUT', '/api/v1/apikeys/no-such-key', { name: 'x' })).status, 404);
    });

    it('lets a member change keys of its project only, never an admin key, and never make one admin', async () => {
      const peer = await newKey({ name: 'peer', project: second.id });
      const member = srv.client(memberKey.value);
      assert.equal((await member.apikeys.update(peer.id, { name: 'peer renamed' })).name, 'peer renamed');
      assert.equal(await statusOf(member.apikeys.update(peer.id, { role: 'admin' as never })), 403);
      const admin = await newKey({ name: 'an admin', role: 'admin', project: second.id });
      assert.equal(await statusOf(member.apikeys.update(admin.id, { name: 'mine now' })), 403);
      const elsewhere = await newKey({ name: 'default project member' });
      assert.equal(await statusOf(member.apikeys.update(elsewhere.id, { enabled: false })), 404);
      assert.equal((await client.apikeys.retrieve(elsewhere.id)).enabled, true);
    });

    it('refuses a disabled key with 401 (the key and its tokens) until it is enabled again', async () => {
      const key = await newKey({ name: 'to disable', project: second.id });
      const user = srv.client(key.value);
      assert.equal((await user.projects.list()).length, 1);
      const jwt = (await srv.api('POST', '/api/v1/token/issue', undefined, key.value)).body.token;
      const disabled = await client.apikeys.update(key.id, { enabled: false });
      assert.equal(disabled.enabled, false);
      const refused = await srv.api('GET', '/api/v1/projects', undefined, key.value);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error, 'unauthorized');
      assert.match(refused.body.message, /disabled/);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 401);
      assert.equal((await srv.api('POST', '/api/v1/token/issue', undefined, key.value)).status, 401);
      const listed = await srv.api('GET', '/api/v1/apikeys');
      assert.equal(listed.body.find((k: { id: string }) => k.id === key.id).enabled, false);

      assert.equal((await client.apikeys.update(key.id, { enabled: true })).enabled, true);
      const self = await srv.api('PUT', `/api/v1/apikeys/${key.id}`, { enabled: false }, key.value);
      assert.equal(self.status, 409, 'a key may not disable itself');
      assert.match(self.body.message, /lock you out/);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, key.value)).status, 200);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 200);
    });

    it('updates the project configuration, merging keys, null clearing one', async () => {
      const first = await client.projects.updateConfiguration(second.id, {
        default_model: 'echo',
        human_context: 'Be brief.',
      });
      assert.deepEqual(first, { default_model: 'echo', human_context: 'Be brief.', embeddings: {} });
      const merged = await client.projects.updateConfiguration(second.id, {
        human_context: null as never,
        main_language: 'fr',
        embeddings: { text: { enabled: true } } as never,
      });
      assert.deepEqual(merged, { default_model: 'echo', main_language: 'fr', embeddings: { text: { enabled: true } } });
      const project = await client.projects.retrieve(second.id);
      assert.deepEqual(project.configuration, merged);

      const unknown = await srv.api('PUT', `/api/v1/projects/${second.id}/configuration`, { colour: 'red' });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /colour.*default_environment/);
      const wrongType = await srv.api('PUT', `/api/v1/projects/${second.id}/configuration`, {
        sync_content_properties: 'yes',
      });
      assert.equal(wrongType.status, 400);
      assert.equal((await srv.api('PUT', '/api/v1/projects/no-such-project/configuration', {})).status, 404);
      // A member of another project does not see this one.
      const outsider = await newKey({ name: 'default member' });
      assert.equal(
        await statusOf(srv.client(outsider.value).projects.updateConfiguration(second.id, { default_model: 'x' })),
        404,
      );
      assert.deepEqual((await client.projects.retrieve(second.id)).configuration, merged);
    });

    it('answers the account and the projects a key may use', async () => {
      const info = await client.account.info();
      assert.equal(info.id, srv.orrery.bootstrap.account.id);
      assert.equal(info.name, 'Default account');
      assert.deepEqual(info.email_domains, []);
      assert.ok(info.created_at);
      const all = await client.account.projects();
      const ids = all.map((p) => p.id);
      assert.ok(ids.includes(srv.orrery.bootstrap.project.id) && ids.includes(second.id));
      assert.ok(all.every((p) => p.account === info.id && typeof p.name === 'string'));
      const member = srv.client(memberKey.value);
      assert.deepEqual(await member.account.projects(), [{ id: second.id, name: 'Client surface', account: info.id }]);
      assert.equal((await member.account.info()).id, info.id);
    });

    it("deletes a project and everything in it, for admin keys, never the caller's own", async () => {
      const p = await srv.api('POST', '/api/v1/projects', { name: 'Doomed' });
      const doomed = p.body as { id: string };
      const key = await newKey({ name: 'doomed member', project: doomed.id });
      const seeded = await seedEcho(srv, { token: key.value });
      const run = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: seeded.interaction.id, data: { text: 'bye' }, tags: ['gone'] },
        key.value,
      );
      assert.equal(run.status, 200, JSON.stringify(run.body));
      // A second run, so the full-text rows of more than one run must go with the project.
      const again = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: seeded.interaction.id, data: { text: 'bye' } },
        key.value,
      );
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const obj = await srv.api('POST', '/api/v1/objects', { name: 'doomed object', properties: { a: 1 } }, key.value);
      assert.equal(obj.status, 200, JSON.stringify(obj.body));
      // Data of the default project, which must survive.
      const kept = await seedEcho(srv);
      const keptRun = await srv.api('POST', '/api/v1/runs', {
        interaction: kept.interaction.id,
        data: { text: 'stay' },
      });

      assert.equal(
        await statusOf(srv.client(key.value).projects.delete(doomed.id)),
        403,
        'a member key may not delete',
      );
      const own = await srv.api('DELETE', `/api/v1/projects/${srv.orrery.bootstrap.project.id}`);
      assert.equal(own.status, 409);
      assert.match(own.body.message, /lock you out/);
      assert.equal(await statusOf(client.projects.delete('no-such-project')), 404);

      const { db } = srv.orrery.database;
      // SQLite keeps the full text in a side table (runs_fts) keyed by the run's search_rowid.
      const fullTextRowsOfDoomed = async () => {
        const { rows } = await sql<{
          n: number;
        }>`SELECT count(*) AS n FROM runs_fts WHERE runs_fts MATCH 'bye'`.execute(db);
        return Number(rows[0]!.n);
      };
      if (dialect === 'sqlite')
        await until('both runs of the doomed project are in the full-text table', async () =>
          (await fullTextRowsOfDoomed()) === 2 ? true : undefined,
        );

      const deleted = await client.projects.delete(doomed.id);
      assert.deepEqual(deleted, { id: doomed.id });
      assert.equal(await statusOf(client.projects.retrieve(doomed.id)), 404);
      assert.equal(
        (await srv.api('GET', '/api/v1/projects', undefined, key.value)).status,
        401,
        "the project's keys went with it",
      );
      assert.equal(await statusOf(client.projects.delete(doomed.id)), 404);
      if (dialect === 'sqlite') assert.equal(await fullTextRowsOfDoomed(), 0, 'no full-text row outlives its run');
      // Every table that keys rows by project, read from the database itself: a feature that adds
      // one and forgets to delete its rows fails here.
      // The audit trail outlives a deleted project (docs/guides/governance.md; test/audit).
      const tables = (await projectTables(db, dialect)).filter((t) => t !== 'audit_events');
      assert.ok(tables.includes('runs') && tables.includes('vectors'), tables.join(', '));
      for (const table of tables) {
        const { rows } = await sql<{
          n: number;
        }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE project_id = ${doomed.id}`.execute(db);
        assert.equal(Number(rows[0]!.n), 0, `${table} rows of the deleted project`);
      }
      const tags = await db.selectFrom('run_tags').select('tag').where('run_id', '=', run.body.id).execute();
      assert.deepEqual(tags, []);
      assert.equal(
        (await srv.api('GET', `/api/v1/runs/${keptRun.body.id}`)).status,
        200,
        'other projects keep their runs',
      );
      assert.equal((await srv.api('GET', `/api/v1/interactions/${kept.interaction.id}`)).status, 200);
      assert.ok(!(await client.account.projects()).some((x) => x.id === doomed.id));
    });
  });
}

/** The tables with a `project_id` column, as the database lists them. */
async function projectTables(db: Kysely<any>, dialect: string): Promise<string[]> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.columns
      WHERE column_name = 'project_id' AND table_schema = current_schema()`.execute(db);
    return rows.map((r) => r.name);
  }
  const { rows } = await sql<{ name: string }>`SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c
    WHERE m.type = 'table' AND c.name = 'project_id'`.execute(db);
  return rows.map((r) => r.name);
}
