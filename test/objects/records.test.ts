import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StreamSource } from '@vertesia/client';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { secondProject, text, upload } from './helpers.ts';

const sha256 = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const streamOf = (s: string) =>
  new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(s));
      c.close();
    },
  });
const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

/** The storage URI an object owns once it adopted `up`; asserts its shape and answers it. */
function ownedSource(up: { id: string; path: string }, objectId: string, actual: string): string {
  const prefix = up.id.slice(0, up.id.length - up.path.length);
  assert.match(
    actual,
    new RegExp(
      `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.orrery/content/${objectId}/[0-9a-z]{26}/${up.path
        .split('/')
        .pop()!
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
    ),
  );
  return actual;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: content object records`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('creates the full record through the official client (upload, then create)', async () => {
      const client = srv.client();
      const type = await client.types.create({ name: 'Invoice' } as any);
      const obj = await client.objects.create({
        name: 'Invoice 42',
        description: 'March',
        tags: ['finance', 'q1', 'finance'],
        type: type.id,
        content: new StreamSource(streamOf('%PDF-1.4 fake'), 'invoice-42.pdf', 'application/pdf'),
        properties: { amount: 42.5, customer: { name: 'ACME' } },
        metadata: { type: 'document', page_count: 1 },
        tokens: { count: 12, encoding: 'o200k_base' },
        external_id: 'ext-42',
        location: '/finance/2024',
      } as any);
      assert.equal(obj.name, 'Invoice 42');
      assert.equal(obj.status, 'created');
      assert.equal((obj as any).root, obj.id);
      assert.deepEqual(obj.revision, { root: obj.id, head: true });
      assert.equal(obj.location, '/finance/2024');
      assert.deepEqual(obj.tags, ['finance', 'q1']);
      assert.deepEqual(obj.type, { id: type.id, name: 'Invoice', ref_type: 'stored' } as any);
      // The object owns its content: the upload moved under .orrery/content/<object id>/ (issue 14).
      assert.match(
        obj.content!.source!,
        new RegExp(`^local://[0-9a-z]+/\\.orrery/content/${obj.id}/[0-9a-z]{26}/[0-9a-z]{26}\\.pdf$`),
      );
      assert.deepEqual(
        { ...obj.content, source: undefined },
        { source: undefined, type: 'application/pdf', name: 'invoice-42.pdf', etag: sha256('%PDF-1.4 fake') },
      );
      assert.deepEqual(obj.properties, { amount: 42.5, customer: { name: 'ACME' } });
      assert.deepEqual(obj.metadata, { type: 'document', page_count: 1 });
      assert.deepEqual(obj.tokens, { count: 12, encoding: 'o200k_base' });
      assert.equal(obj.external_id, 'ext-42');
      assert.equal((obj as any).run, null);
      assert.match(obj.created_by, /^apikey:[0-9a-z]+$/);
      assert.equal(obj.updated_by, obj.created_by);
      assert.ok(Date.parse(obj.created_at) <= Date.parse(obj.updated_at));
      assert.equal((obj as any).text, undefined, 'text is hidden by default');

      // Content processing (status, tokens, metadata) may already be at work on it: compare the rest.
      const got = await client.objects.retrieve(obj.id);
      const stable = (o: any) => ({
        ...o,
        status: undefined,
        tokens: undefined,
        metadata: undefined,
        updated_at: undefined,
        updated_by: undefined,
      });
      assert.deepEqual(stable(got), stable(obj));
      const source = await client.objects.getContentSource(obj.id);
      assert.deepEqual(source, obj.content);
      const { url } = await client.objects.getDownloadUrl(source.source!);
      assert.equal(await text(await fetch(url)), '%PDF-1.4 fake');
      assert.deepEqual(await client.objects.getObjectText(obj.id), {});
      assert.deepEqual(await client.objects.listRenditions(obj.id), []);
    });

    it('defaults: location /, empty tags and properties, null description, name from the content', async () => {
      const up = await upload(srv, 'notes.txt', 'some notes');
      const r = await srv.api('POST', '/api/v1/objects', { content: { source: up.id } });
      assert.equal(r.status, 200);
      assert.equal(r.body.name, 'notes.txt');
      assert.equal(r.body.location, '/');
      assert.deepEqual(r.body.tags, []);
      assert.deepEqual(r.body.properties, {});
      assert.equal(r.body.description, null);
      assert.equal(r.body.external_id, null);
      assert.equal(r.body.tokens, null);
      assert.equal(r.body.parent, undefined);
      assert.deepEqual(r.body.content, {
        source: ownedSource(up, r.body.id, r.body.content.source),
        type: 'text/plain',
        name: 'notes.txt',
        etag: up.etag,
      });
      assert.equal((await srv.api('POST', '/api/v1/objects', { properties: {} })).status, 400, 'a name is needed');
    });

    it('projects with select: keep, drop, and add hidden fields', async () => {
      const client = srv.client();
      const obj = await client.objects.create({
        name: 'Projected',
        description: 'd',
        properties: { a: 1, b: { c: 2 } },
        text: 'the text',
      } as any);
      assert.deepEqual(await client.objects.retrieve(obj.id, 'name properties'), {
        id: obj.id,
        name: 'Projected',
        properties: { a: 1, b: { c: 2 } },
      });
      assert.deepEqual(await client.objects.retrieve(obj.id, 'properties.b.c'), {
        id: obj.id,
        properties: { b: { c: 2 } },
      });
      const dropped = (await client.objects.retrieve(obj.id, '-description -properties')) as any;
      assert.equal(dropped.description, undefined);
      assert.equal(dropped.properties, undefined);
      assert.equal(dropped.name, 'Projected');
      assert.equal(dropped.text, undefined);
      const withText = (await client.objects.retrieve(obj.id, '+text')) as any;
      assert.equal(withText.text, 'the text');
      assert.equal(withText.text_etag, sha256('the text'));
      assert.equal(withText.name, 'Projected', '+field keeps the default fields');
      const several = (await client.objects.retrieve(obj.id, '+text +embeddings +parts +tokens')) as any;
      // The object's vectors (test/embeddings/object-embeddings.test.ts): its text's, once embedded.
      assert.ok(several.embeddings && typeof several.embeddings === 'object' && !Array.isArray(several.embeddings));
      for (const e of Object.values(several.embeddings) as any[]) assert.equal(e.values.length, 384);
      assert.equal(several.tokens, null);
      assert.deepEqual(await client.objects.retrieve(obj.id, 'name +text'), {
        id: obj.id,
        name: 'Projected',
        text: 'the text',
      } as any);
      assert.deepEqual(await client.objects.getObjectText(obj.id), { text: 'the text' });
      assert.equal(
        (await srv.api('GET', `/api/v1/objects/${obj.id}?select=${encodeURIComponent('na(me')}`)).status,
        400,
      );
    });

    it('updates the given fields only; if-match with a stale ETag is a 412 and writes nothing', async () => {
      const client = srv.client();
      const obj = await client.objects.create({
        name: 'Versioned',
        description: 'v1',
        properties: { n: 1 },
        tags: ['x'],
      } as any);
      const first = await srv.api('GET', `/api/v1/objects/${obj.id}`);
      const etag1 = first.headers.get('etag')!;
      assert.match(etag1, /^"[A-Za-z0-9_-]+"$/);
      const updated = await client.objects.update(obj.id, { description: 'v2' } as any, { ifMatch: etag1 });
      assert.equal(updated.description, 'v2');
      assert.deepEqual(updated.properties, { n: 1 }, 'untouched fields stay');
      assert.deepEqual(updated.tags, ['x']);
      assert.equal(updated.created_at, obj.created_at);
      assert.ok(updated.updated_at >= obj.updated_at);
      const etag2 = (await srv.api('GET', `/api/v1/objects/${obj.id}`)).headers.get('etag')!;
      assert.notEqual(etag2, etag1);

      await assert.rejects(
        client.objects.update(obj.id, { description: 'lost update' } as any, { ifMatch: etag1 }),
        status(412),
      );
      const stale = await srv.api('PUT', `/api/v1/objects/${obj.id}`, { description: 'lost' }, undefined, {
        'if-match': etag1,
      });
      assert.equal(stale.status, 412);
      assert.equal(stale.body.error, 'precondition_failed');
      assert.equal(stale.body.details.etag, etag2);
      assert.equal((await client.objects.retrieve(obj.id)).description, 'v2', 'nothing was written');
      // Unquoted, weak and list forms, and *, are accepted too.
      const ok = await srv.api('PUT', `/api/v1/objects/${obj.id}`, { properties: { n: 2 } }, undefined, {
        'if-match': `W/"nope", ${etag2.replace(/"/g, '')}`,
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('etag'), (await srv.api('GET', `/api/v1/objects/${obj.id}`)).headers.get('etag'));
      assert.equal(
        (await srv.api('PUT', `/api/v1/objects/${obj.id}`, { tags: [] }, undefined, { 'if-match': '*' })).status,
        200,
      );
      assert.equal(
        (await srv.api('PUT', `/api/v1/objects/nope`, { tags: [] }, undefined, { 'if-match': '*' })).status,
        404,
      );
    });

    it('accepts the content ETag as if-match (how upstream clients use it)', async () => {
      const client = srv.client();
      const up = await upload(srv, 'c.txt', 'content v1');
      const obj = await client.objects.create({ name: 'By content', content: { source: up.id } } as any);
      const up2 = await upload(srv, 'c2.txt', 'content v2');
      const changed = await client.objects.update(obj.id, { content: { source: up2.id } } as any, { ifMatch: up.etag });
      assert.equal(changed.content!.etag, up2.etag);
      await assert.rejects(client.objects.update(obj.id, { name: 'again' } as any, { ifMatch: up.etag }), status(412));
    });

    it('refuses a bad content.source with 400', async () => {
      const other = await secondProject(srv);
      const theirs = await upload(srv, 'theirs.txt', 'not yours', { token: other.key });
      const project = theirs.id.split('/')[2];
      const mine = await upload(srv, 'mine.txt', 'mine');
      const myProject = mine.id.split('/')[2];
      for (const source of [
        theirs.id, // another project's upload
        `local://${myProject}/never-uploaded.txt`,
        'gs://some-bucket/file.pdf',
        'https://example.com/file.pdf',
        `local://${myProject}/../${project}/${theirs.path}`,
      ]) {
        const r = await srv.api('POST', '/api/v1/objects', { name: 'bad', content: { source } });
        assert.equal(r.status, 400, source);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, /content\.source/);
      }
      const obj = await srv.api('POST', '/api/v1/objects', { name: 'ok', content: { source: mine.id } });
      assert.equal(obj.status, 200);
      const bad = await srv.api('PUT', `/api/v1/objects/${obj.body.id}`, { content: { source: theirs.id } });
      assert.equal(bad.status, 400);
      assert.equal((await srv.api('POST', '/api/v1/objects', { name: 'x', content: { source: 42 } })).status, 400);
    });

    it('checks references: type, parent and run must exist in the project (404)', async () => {
      const { interaction } = await seedEcho(srv);
      const run = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'hi' } });
      const parent = await srv.api('POST', '/api/v1/objects', { name: 'Folder' });
      const child = await srv.api('POST', '/api/v1/objects', {
        name: 'Child',
        parent: parent.body.id,
        run: run.body.id,
        location: 'folder/sub/',
      });
      assert.equal(child.status, 200);
      assert.equal(child.body.parent, parent.body.id);
      assert.equal(child.body.run, run.body.id);
      assert.equal(child.body.location, '/folder/sub');
      for (const [field, value] of [
        ['type', 'no-such-type'],
        ['parent', 'no-such-object'],
        ['run', 'no-such-run'],
      ]) {
        const r = await srv.api('POST', '/api/v1/objects', { name: 'x', [field]: value });
        assert.equal(r.status, 404, field);
        assert.equal(r.body.error, 'not_found');
      }
      assert.equal(
        (await srv.api('PUT', `/api/v1/objects/${child.body.id}`, { parent: child.body.id })).status,
        400,
        'not its own parent',
      );
      assert.equal((await srv.api('PUT', `/api/v1/objects/${child.body.id}`, { status: 'bogus' })).status, 400);
      assert.equal(
        (await srv.api('PUT', `/api/v1/objects/${child.body.id}`, { status: 'archived' })).body.status,
        'archived',
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/objects', { name: 'x', status: 'ready' })).body.status,
        'created',
        'new objects are always created',
      );
    });

    it('replaces an object when created with its id', async () => {
      const client = srv.client();
      const a = await upload(srv, 'a.txt', 'AAA');
      const b = await upload(srv, 'b.txt', 'BBB');
      const obj = await client.objects.create({
        name: 'Original',
        description: 'd',
        properties: { keep: false },
        content: { source: a.id },
      } as any);
      await client.objects.update(obj.id, { status: 'archived' } as any);
      const replaced = await client.objects.create({
        id: obj.id,
        name: 'Replacement',
        content: { source: b.id },
      } as any);
      assert.equal(replaced.id, obj.id);
      assert.equal(replaced.name, 'Replacement');
      assert.equal(replaced.description, null, 'fields not given are reset');
      assert.deepEqual(replaced.properties, {});
      assert.equal(replaced.status, 'created');
      assert.equal(replaced.created_at, obj.created_at);
      assert.equal(replaced.content!.source, ownedSource(b, obj.id, replaced.content!.source!));
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/download-url', { file: obj.content!.source })).status,
        404,
        'the replaced content, now unreferenced, is deleted',
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/download-url', { file: a.id })).status,
        404,
        'the upload itself moved to the object',
      );
      assert.equal((await srv.api('POST', '/api/v1/objects', { id: 'no-such-object', name: 'x' })).status, 404);
    });

    it('deletes: answers {id, count}; the blob goes with the last object pointing at it', async () => {
      const client = srv.client();
      const shared = await upload(srv, 'shared.txt', 'shared bytes');
      const one = await client.objects.create({ name: 'one', content: { source: shared.id } } as any);
      // Another object shares the content through the first one's source (the upload itself is one object's now).
      const two = await client.objects.create({ name: 'two', content: { source: one.content!.source } } as any);
      assert.equal(two.content!.source, one.content!.source);
      const owned = one.content!.source!.split('/').slice(3).join('/');
      const file = join(srv.dataDir, 'blobs', shared.id.split('/')[2], owned);
      assert.ok(existsSync(file));
      assert.equal(
        existsSync(join(srv.dataDir, 'blobs', shared.id.split('/')[2], shared.path)),
        false,
        'the upload key is empty',
      );
      assert.deepEqual(await client.objects.delete(one.id), { id: one.id, count: 1 });
      await assert.rejects(client.objects.retrieve(one.id), status(404));
      assert.ok(existsSync(file), 'still referenced by "two"');
      const { url } = await client.objects.getDownloadUrl(one.content!.source!);
      assert.equal(await text(await fetch(url)), 'shared bytes');
      assert.deepEqual(await client.objects.delete(two.id), { id: two.id, count: 1 });
      for (let i = 0; i < 50 && existsSync(file); i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(existsSync(file), false, 'the bytes are deleted');
      assert.equal((await fetch(url)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/objects/${two.id}`)).status, 404);
      // An update that moves to other content releases the old blob too.
      const c1 = await upload(srv, 'c1.txt', 'c1');
      const c2 = await upload(srv, 'c2.txt', 'c2');
      const moving = await client.objects.create({ name: 'moving', content: { source: c1.id } } as any);
      const moved = await client.objects.update(moving.id, { content: { source: c2.id } } as any);
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/download-url', { file: moving.content!.source })).status,
        404,
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/download-url', { file: moved.content!.source })).status,
        200,
      );
    });

    it("makes another project's objects a 404 everywhere", async () => {
      const obj = await srv.api('POST', '/api/v1/objects', { name: 'private', text: 'secret text' });
      const other = await secondProject(srv);
      const id = obj.body.id;
      const calls: [string, string, unknown?][] = [
        ['GET', `/api/v1/objects/${id}`],
        ['PUT', `/api/v1/objects/${id}`, { name: 'stolen' }],
        ['DELETE', `/api/v1/objects/${id}`],
        ['GET', `/api/v1/objects/${id}/text`],
        ['GET', `/api/v1/objects/${id}/content-source`],
        ['GET', `/api/v1/objects/${id}/renditions`],
        ['POST', '/api/v1/objects', { id, name: 'replace theirs' }],
        ['POST', '/api/v1/objects', { name: 'child', parent: id }],
      ];
      for (const [method, path, body] of calls) {
        const r = await srv.api(method, path, body, other.key);
        assert.equal(r.status, 404, `${method} ${path}`);
        assert.equal(r.body.error, 'not_found');
      }
      const client = srv.client(other.key);
      await assert.rejects(client.objects.retrieve(id), status(404));
      assert.equal(
        (await client.objects.list()).some((o) => o.id === id),
        false,
      );
      assert.equal((await srv.api('GET', `/api/v1/objects/${id}`)).body.name, 'private', 'untouched');
    });

    it('answers a 404 for a content source of an object without content', async () => {
      const obj = await srv.api('POST', '/api/v1/objects', { name: 'no content' });
      assert.equal((await srv.api('GET', `/api/v1/objects/${obj.body.id}/content-source`)).status, 404);
    });
  });
}
