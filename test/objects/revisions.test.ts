/**
 * Revisions of content objects through the official client: update(id, payload,
 * {createRevision, revisionLabel}), getRevisions, list with all_revisions / from_root, and what
 * deleting a head does. Bad paths through HTTP.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { processed, secondProject, upload } from './helpers.ts';

const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: object revisions`, () => {
    let srv: TestServer;

    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('createRevision makes a new head and keeps the object named as an earlier revision', async () => {
      const client = srv.client();
      const first: any = await client.objects.create({
        name: 'Contract',
        location: '/rev',
        properties: { v: 1 },
        tags: ['draft'],
      } as any);
      assert.deepEqual(
        first.revision,
        { root: first.id, head: true },
        'a new object is the root and head of its own history',
      );

      const second: any = await client.objects.update(first.id, { properties: { v: 2 } } as any, {
        createRevision: true,
        revisionLabel: 'v2 — approuvé',
      });
      assert.notEqual(second.id, first.id, 'a revision is an object of its own');
      assert.deepEqual(
        second.revision,
        { root: first.id, head: true, parent: first.id, label: 'v2 — approuvé' },
        'the Unicode label travels in the query string',
      );
      assert.equal(second.name, 'Contract', 'unchanged fields are carried over');
      assert.deepEqual(second.tags, ['draft']);
      assert.deepEqual(second.properties, { v: 2 });

      const old: any = await client.objects.retrieve(first.id);
      assert.deepEqual(old.properties, { v: 1 }, 'the earlier revision keeps what it had');
      assert.deepEqual(old.revision, { root: first.id, head: false });

      const third: any = await client.objects.update(second.id, { name: 'Contract (signed)' } as any, {
        createRevision: true,
      });
      assert.deepEqual(third.revision, { root: first.id, head: true, parent: second.id });
      assert.deepEqual(third.properties, { v: 2 });

      for (const id of [first.id, second.id, third.id]) {
        const revisions: any[] = await client.objects.getRevisions(id);
        assert.deepEqual(
          revisions.map((r) => r.id),
          [third.id, second.id, first.id],
          'any revision names the whole history, newest first',
        );
        assert.deepEqual(
          revisions.map((r) => r.revision.head),
          [true, false, false],
        );
      }

      // Listings show the head only, unless asked.
      const heads: any[] = await client.objects.list({ query: { location: '/rev' } } as any);
      assert.deepEqual(
        heads.map((o) => o.id),
        [third.id],
      );
      const all: any[] = await client.objects.list({ query: { location: '/rev' }, all_revisions: true } as any);
      assert.deepEqual(new Set(all.map((o) => o.id)), new Set([first.id, second.id, third.id]));
      const fromRoot: any[] = await client.objects.list({ from_root: first.id } as any);
      assert.deepEqual(new Set(fromRoot.map((o) => o.id)), new Set([first.id, second.id, third.id]));
      const found: any[] = await client.objects.find({ query: { 'revision.root': first.id }, limit: 10 } as any);
      assert.deepEqual(
        found.map((o) => o.id),
        [third.id],
        'find shows heads, like the listing',
      );
      const foundAll: any[] = await client.objects.find({
        query: { 'revision.root': first.id },
        all_revisions: true,
        limit: 10,
      });
      assert.deepEqual(new Set(foundAll.map((o) => o.id)), new Set([first.id, second.id, third.id]));
      const foundFromRoot: any[] = await client.objects.find({ query: {}, from_root: first.id, limit: 10 });
      assert.deepEqual(new Set(foundFromRoot.map((o) => o.id)), new Set([first.id, second.id, third.id]));
      // A field the find does not know is refused by name, never ignored.
      const unknown = await srv.api('POST', '/api/v1/objects/find', { query: {}, all_revision: true });
      assert.equal(unknown.status, 400, JSON.stringify(unknown.body));
      assert.match(unknown.body.message, /body\.all_revision is not a field/);
      const runs = await srv.api('POST', '/api/v1/runs/find', { query: {}, all_revisions: true });
      assert.equal(runs.status, 400, JSON.stringify(runs.body));
      assert.match(runs.body.message, /body\.all_revisions is not a field/, 'runs have no revisions');
      const types = await srv.api('POST', '/api/v1/types/find', { query: {}, from_root: first.id });
      assert.equal(types.status, 400, JSON.stringify(types.body));
      assert.match(types.body.message, /body\.from_root is not a field/);
      const searched: any = await client.objects.search({ query: { location: '/rev' } } as any);
      assert.deepEqual(
        searched.results.map((o: any) => o.id),
        [third.id],
      );
      const count: any = await client.objects.count({ location: '/rev' } as any);
      assert.equal(count.count ?? count, 1);
    });

    it('an update without createRevision changes the object in place; an earlier revision cannot be revised', async () => {
      const client = srv.client();
      const a: any = await client.objects.create({ name: 'In place', location: '/rev-place' } as any);
      const b: any = await client.objects.update(a.id, { description: 'same id' } as any);
      assert.equal(b.id, a.id);
      assert.deepEqual(b.revision, { root: a.id, head: true });
      const c: any = await client.objects.update(a.id, { description: 'new head' } as any, { createRevision: true });
      const stale = await srv.api('PUT', `/api/v1/objects/${a.id}`, { description: 'a branch' }, undefined, {
        'x-create-revision': 'true',
      });
      assert.equal(stale.status, 409, JSON.stringify(stale.body));
      assert.match(stale.body.message, new RegExp(c.id), 'the message names the head to revise instead');
      // An earlier revision can still be corrected in place (it is an object like any other).
      const fixed = await srv.api('PUT', `/api/v1/objects/${a.id}`, { description: 'typo fixed' });
      assert.equal(fixed.status, 200);
      assert.equal(fixed.body.revision.head, false, 'an update in place keeps its place in the history');
    });

    it('content is carried over to the new revision and shared until the last revision lets it go', async () => {
      const client = srv.client();
      const file = await upload(srv, 'notes.txt', 'the quick brown fox jumps over the lazy dog', {
        type: 'text/plain',
      });
      const a: any = await client.objects.create({
        name: 'With content',
        location: '/rev-content',
        content: { source: file.id, type: 'text/plain', name: 'notes.txt' },
      } as any);
      await processed(srv, a.id);
      const b: any = await client.objects.update(a.id, { properties: { reviewed: true } } as any, {
        createRevision: true,
      });
      assert.equal(
        b.content.source,
        ((await client.objects.retrieve(a.id)) as any).content.source,
        'both revisions point at the same bytes',
      );
      const ready = await processed(srv, b.id);
      assert.equal(ready.status, 'ready');
      assert.match(ready.text, /quick brown fox/, 'the new revision has its text');

      // Deleting the head makes the newest remaining revision the head again.
      await client.objects.delete(b.id);
      const back: any = await client.objects.retrieve(a.id);
      assert.equal(back.revision.head, true);
      const listed: any[] = await client.objects.list({ query: { location: '/rev-content' } } as any);
      assert.deepEqual(
        listed.map((o) => o.id),
        [a.id],
        'the history is still listed',
      );
      const url: any = await client.objects.getContentSource(a.id);
      const dl = await srv.api('POST', '/api/v1/objects/download-url', { file: url.source });
      assert.equal(dl.status, 200);
      const bytes = await fetch(dl.body.url);
      assert.equal(
        await bytes.text(),
        'the quick brown fox jumps over the lazy dog',
        'the shared file outlived the deleted revision',
      );
    });

    it('bulk deletion of a head promotes the next revision too', async () => {
      const client = srv.client();
      const a: any = await client.objects.create({ name: 'Bulk rev', location: '/rev-bulk' } as any);
      const b: any = await client.objects.update(a.id, { description: '2' } as any, { createRevision: true });
      const c: any = await client.objects.update(b.id, { description: '3' } as any, { createRevision: true });
      const r: any = await client.objects.delete([c.id]);
      assert.equal(r.deleted, 1);
      const revisions: any[] = await client.objects.getRevisions(a.id);
      assert.deepEqual(
        revisions.map((o) => [o.id, o.revision.head]),
        [
          [b.id, true],
          [a.id, false],
        ],
      );
    });

    it('refuses bad revision requests with a 4xx that says what to fix', async () => {
      const client = srv.client();
      const a: any = await client.objects.create({ name: 'Bad rev', location: '/rev-bad' } as any);
      const yes = await srv.api('PUT', `/api/v1/objects/${a.id}`, { description: 'x' }, undefined, {
        'x-create-revision': 'maybe',
      });
      assert.equal(yes.status, 400);
      assert.match(yes.body.message, /x-create-revision/);
      const label = await srv.api('PUT', `/api/v1/objects/${a.id}?revision_label=v1`, { description: 'x' });
      assert.equal(label.status, 400);
      assert.match(label.body.message, /x-create-revision/);
      const long = await srv.api(
        'PUT',
        `/api/v1/objects/${a.id}?revision_label=${'x'.repeat(201)}`,
        { description: 'x' },
        undefined,
        { 'x-create-revision': 'true' },
      );
      assert.equal(long.status, 400);
      await assert.rejects(client.objects.getRevisions('no-such-object'), status(404));
      await assert.rejects(
        client.objects.update('no-such-object', { name: 'x' } as any, { createRevision: true }),
        status(404),
      );
      const other = await secondProject(srv);
      assert.equal(
        (await srv.api('GET', `/api/v1/objects/${a.id}/revisions`, undefined, other.key)).status,
        404,
        'another project sees nothing',
      );
      const theirs = await srv.api('PUT', `/api/v1/objects/${a.id}`, { name: 'x' }, other.key, {
        'x-create-revision': 'true',
      });
      assert.equal(theirs.status, 404);
      assert.equal((await client.objects.getRevisions(a.id)).length, 1, 'nothing was written by the refused requests');
    });
  });
}
