/**
 * The official client's `files` API beyond signed URLs (issue 24): list / listByPrefix,
 * deleteFile (one file or a prefix), copyFile, bulkGetUploadUrls; all scoped to the caller's
 * project, with no way out of its prefix.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { StreamSource } from '@vertesia/client';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject, upload } from '../objects/helpers.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const status = (code: number) => (err: any) => err?.status === code;

const stream = (s: string) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(s));
      c.close();
    },
  });

const readAll = async (r: ReadableStream<Uint8Array>) =>
  Buffer.from(await new Response(r).arrayBuffer()).toString('utf8');

for (const dialect of TEST_DIALECTS)
  for (const scheme of ['local', 's3'] as const) {
    describe(`${dialect}, ${scheme} store: the client's files API (list, delete, copy, bulk upload URLs)`, () => {
      let srv: TestServer;
      let s3: TestS3 | undefined;
      let project: string;
      let other: { id: string; key: string };
      before(async () => {
        if (scheme === 's3') s3 = await startS3();
        srv = await startTestServer(dialect, s3 ? { blobUrl: s3.blobUrl } : {});
        project = (await srv.api('GET', '/api/v1/projects')).body.find((p: any) => p.name === 'Default project').id;
        other = await secondProject(srv);
      });
      after(async () => {
        await srv.close();
        await s3?.close();
      });

      it('lists keys by prefix in key order, through list and listByPrefix; server-kept keys are not listed', async () => {
        const client = srv.client();
        for (const k of ['agents/run1/b.json', 'agents/run1/a.json', 'agents/run2/c.json', 'memories/m.tar.gz']) {
          const id = await client.files.uploadFile(
            new StreamSource(stream(`bytes of ${k}`), k.split('/').pop()!, 'application/json', k),
          );
          assert.equal(id, `${scheme}://${project}/${k}`);
        }
        assert.deepEqual((await client.files.listByPrefix('agents/run1/')).files, [
          'agents/run1/a.json',
          'agents/run1/b.json',
        ]);
        assert.deepEqual(await client.files.listArtifacts('run2'), ['agents/run2/c.json']);
        assert.deepEqual((await client.files.list('agents/')).files, [
          'agents/run1/a.json',
          'agents/run1/b.json',
          'agents/run2/c.json',
        ]);
        assert.deepEqual((await client.files.list('agents/run')).files.length, 3);
        assert.deepEqual((await client.files.list('nothing/')).files, []);
        // A storage URI of this project works as a prefix too.
        assert.deepEqual((await client.files.list(`${scheme}://${project}/memories/`)).files, ['memories/m.tar.gz']);
        // An object's content lives under the server's own prefix: not listed.
        const obj = await client.objects.create({
          name: 'doc',
          content: { source: `${scheme}://${project}/memories/m.tar.gz`, type: 'application/gzip', name: 'm.tar.gz' },
        } as any);
        assert.ok(obj.id);
        const all = (await client.files.list('')).files;
        assert.ok(
          all.every((k) => !k.startsWith('.orrery/')),
          JSON.stringify(all),
        );
        assert.ok(!all.includes('memories/m.tar.gz'), 'the upload moved into the object');
        // Paging: limit and offset (bounded by 1,000).
        const page = await srv.api('GET', '/api/v1/files/list?prefix=agents/&limit=2&offset=1');
        assert.equal(page.status, 200);
        assert.deepEqual(page.body.files, ['agents/run1/b.json', 'agents/run2/c.json']);
        assert.equal((await srv.api('GET', '/api/v1/files/list?prefix=agents/&limit=1001')).status, 400);
        assert.equal((await srv.api('GET', '/api/v1/files/list?prefix=agents/&limit=0')).status, 400);
      });

      it('never lists, deletes or copies across projects, and refuses prefixes that leave the project', async () => {
        const mine = srv.client();
        const theirs = srv.client(other.key);
        await theirs.files.uploadFile(
          new StreamSource(stream('secret'), 'secret.txt', 'text/plain', 'shared/secret.txt'),
        );
        await mine.files.uploadFile(new StreamSource(stream('mine'), 'mine.txt', 'text/plain', 'shared/mine.txt'));
        assert.deepEqual((await mine.files.list('shared/')).files, ['shared/mine.txt']);
        assert.deepEqual((await theirs.files.list('shared/')).files, ['shared/secret.txt']);
        const theirUri = `${scheme}://${other.id}/shared/secret.txt`;
        await assert.rejects(mine.files.list(`${scheme}://${other.id}/shared/`), status(404));
        await assert.rejects(mine.files.deleteFile(theirUri), status(404));
        await assert.rejects(mine.files.deleteFile(`${scheme}://${other.id}/shared/`, true), status(404));
        await assert.rejects(mine.files.copyFile(theirUri, 'stolen.txt'), status(404));
        await assert.rejects(
          mine.files.copyFile('shared/mine.txt', `${scheme}://${other.id}/shared/planted.txt`),
          status(404),
        );
        // Paths that try to climb out, raw or encoded, are refused (or never reach a file).
        // A prefix that decodes to a literal "%2F" is an odd key of this project, not a way out.
        assert.deepEqual((await srv.api('GET', `/api/v1/files/list?prefix=..%252F${other.id}%252Fshared`)).body, {
          files: [],
        });
        for (const prefix of [
          '../',
          '../../',
          'shared/../../',
          'a//b',
          '..',
          `../${other.id}/shared/`,
          'a\\..\\b',
          '/../x',
        ]) {
          const r = await srv.api('GET', `/api/v1/files/list?prefix=${encodeURIComponent(prefix)}`);
          assert.equal(r.status, 400, `prefix ${prefix}: ${JSON.stringify(r.body)}`);
          assert.equal(r.body.error, 'bad_request');
          assert.match(r.body.message, /prefix/);
        }
        for (const path of [
          `..%2F${other.id}%2Fshared%2Fsecret.txt`,
          `shared%2F..%2F..%2F${other.id}%2Fshared%2Fsecret.txt`,
          `%2E%2E%2F${other.id}%2Fshared%2Fsecret.txt`,
        ]) {
          const r = await srv.api('DELETE', `/api/v1/files/${path}`);
          assert.ok(r.status === 400 || r.status === 404, `DELETE ${path}: ${r.status}`);
          const rp = await srv.api('DELETE', `/api/v1/files/${path}?prefix=true`);
          assert.ok(rp.status === 400 || rp.status === 404, `DELETE ${path}?prefix=true: ${rp.status}`);
        }
        for (const [source, dest] of [
          ['../x', 'y'],
          ['shared/mine.txt', '../escape.txt'],
          ['shared/mine.txt', `/..//${other.id}/x`],
          ['shared/mine.txt', 'a\\b'],
        ]) {
          const r = await srv.api('POST', '/api/v1/files/copy', { source, dest });
          assert.equal(r.status, 400, `${source} → ${dest}: ${JSON.stringify(r.body)}`);
        }
        // The other project's file is untouched.
        assert.deepEqual((await theirs.files.list('shared/')).files, ['shared/secret.txt']);
        assert.equal(await readAll(await theirs.files.downloadFile('shared/secret.txt')), 'secret');
      });

      it('deletes one file, or every file under a prefix; a missing file is a 404', async () => {
        const client = srv.client();
        for (const k of ['del/one.txt', 'del/dir/two.txt', 'del/dir/three.txt', 'delx/keep.txt']) {
          await client.files.uploadFile(new StreamSource(stream(k), 'f.txt', 'text/plain', k));
        }
        const one = await client.files.deleteFile('del/one.txt');
        assert.deepEqual(one, { success: true, count: 1, file: `${scheme}://${project}/del/one.txt` });
        await assert.rejects(client.files.getDownloadUrl('del/one.txt'), status(404));
        await assert.rejects(client.files.deleteFile('del/one.txt'), status(404));
        const many = await client.files.deleteFile('del/dir/', true);
        assert.equal(many.success, true);
        assert.equal(many.count, 2);
        assert.deepEqual((await client.files.list('del')).files, ['delx/keep.txt']);
        assert.equal((await client.files.deleteFile('nothing/here/', true)).count, 0);
        // Deleting the whole project at once, or the server's own keys, is refused.
        const everything = await srv.api('DELETE', '/api/v1/files/?prefix=true');
        assert.ok(everything.status === 400 || everything.status === 404, String(everything.status));
        for (const path of ['.orrery/content/x', '.orrery/']) {
          const r = await srv.api('DELETE', `/api/v1/files/${path}?prefix=true`);
          assert.equal(r.status, 400, path);
          assert.match(r.body.message, /kept by the server/);
        }
        assert.equal((await srv.api('DELETE', '/api/v1/files/a.txt?prefix=maybe')).status, 400);
      });

      it('copies a file inside the project (bytes, type), replacing the destination; refuses a missing source and server keys', async () => {
        const client = srv.client();
        await client.files.uploadFile(
          new StreamSource(stream('{"a":1}'), 'src.json', 'application/json', 'copy/src.json'),
        );
        const dest = await client.files.copyFile('copy/src.json', 'copy/dst.json');
        assert.equal(dest, `${scheme}://${project}/copy/dst.json`);
        assert.equal(await readAll(await client.files.downloadFile('copy/dst.json')), '{"a":1}');
        const meta = await client.files.getMetadata('copy/dst.json');
        assert.equal(meta.contentType, 'application/json');
        assert.equal(meta.name, 'dst.json');
        // The source stays; a second copy over the destination replaces it.
        await client.files.uploadFile(
          new StreamSource(stream('{"a":2}'), 'src.json', 'application/json', 'copy/src.json'),
        );
        await client.files.copyFile(`${scheme}://${project}/copy/src.json`, 'copy/dst.json');
        assert.equal(await readAll(await client.files.downloadFile('copy/dst.json')), '{"a":2}');
        assert.deepEqual((await client.files.list('copy/')).files, ['copy/dst.json', 'copy/src.json']);
        await assert.rejects(client.files.copyFile('copy/none.json', 'copy/x.json'), status(404));
        await assert.rejects(client.files.copyFile('copy/src.json', 'copy/src.json'), status(400));
        await assert.rejects(client.files.copyFile('copy/src.json', '.orrery/content/x'), status(400));
        // A destination inside a file key cannot exist.
        if (scheme === 'local')
          await assert.rejects(client.files.copyFile('copy/src.json', 'copy/src.json/inner'), status(409));
        for (const body of [
          {},
          { source: 'copy/src.json' },
          { dest: 'x' },
          { source: '', dest: 'x' },
          { source: 1, dest: 'x' },
        ]) {
          const r = await srv.api('POST', '/api/v1/files/copy', body);
          assert.equal(r.status, 400, JSON.stringify(body));
        }
      });

      it('gives up to 100 upload URLs in one call, in order, each usable; more, or a bad entry, is a 400 naming it', async () => {
        const client = srv.client();
        const { files } = await client.files.bulkGetUploadUrls({
          files: [{ name: 'a.txt' }, { name: 'b.pdf', id: 'bulk/b.pdf' }, { name: 'c', mime_type: 'text/csv' }],
        });
        assert.equal(files.length, 3);
        assert.equal(files[0].mime_type, 'text/plain');
        assert.equal(files[1].path, 'bulk/b.pdf');
        assert.equal(files[1].id, `${scheme}://${project}/bulk/b.pdf`);
        assert.equal(files[2].mime_type, 'text/csv');
        const put = await fetch(files[1].url, {
          method: 'PUT',
          body: '%PDF-1.4',
          headers: { 'content-type': 'application/pdf' },
        });
        assert.equal(put.status, 200);
        assert.deepEqual((await client.files.list('bulk/')).files, ['bulk/b.pdf']);
        const results = await client.files.bulkUpload([
          new StreamSource(stream('one'), 'one.txt', 'text/plain', 'bulk2/one.txt'),
          new StreamSource(stream('two'), 'two.txt', 'text/plain', 'bulk2/two.txt'),
        ]);
        assert.deepEqual(
          results.map((r) => r.source),
          [`${scheme}://${project}/bulk2/one.txt`, `${scheme}://${project}/bulk2/two.txt`],
        );
        assert.equal(await readAll(await client.files.downloadFile('bulk2/two.txt')), 'two');
        assert.deepEqual((await client.files.bulkGetUploadUrls({ files: [] })).files, []);
        assert.equal(
          (
            await client.files.bulkGetUploadUrls({
              files: Array.from({ length: 100 }, (_, i) => ({ name: `f${i}.txt` })),
            })
          ).files.length,
          100,
        );
        const tooMany = await srv.api('POST', '/api/v1/files/bulk-upload-urls', {
          files: Array.from({ length: 101 }, (_, i) => ({ name: `f${i}.txt` })),
        });
        assert.equal(tooMany.status, 400);
        assert.match(tooMany.body.message, /100|files/);
        const bad = await srv.api('POST', '/api/v1/files/bulk-upload-urls', {
          files: [{ name: 'ok.txt' }, { name: 'x.txt', id: '../escape.txt' }],
        });
        assert.equal(bad.status, 400);
        assert.match(bad.body.message, /files\[1\]/);
        const theirs = await srv.api('POST', '/api/v1/files/bulk-upload-urls', {
          files: [{ name: 'x.txt', id: `${scheme}://${other.id}/planted.txt` }],
        });
        assert.equal(theirs.status, 404);
        for (const body of [{}, { files: 'a' }, { files: [{}] }, { files: [{ name: '' }] }]) {
          assert.equal(
            (await srv.api('POST', '/api/v1/files/bulk-upload-urls', body)).status,
            400,
            JSON.stringify(body),
          );
        }
        // Uploading through the helper that the objects tests use still lands in this project only.
        await upload(srv, 'z.txt', 'z', { id: 'bulk/z.txt' });
        assert.deepEqual((await srv.client(other.key).files.list('bulk/')).files, []);
      });
    });
  }
