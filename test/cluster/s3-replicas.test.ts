/**
 * The scale-out deployment: two server processes on one PostgreSQL and one S3-compatible server.
 * Objects uploaded through one replica (presigned PUT straight to S3) are read, downloaded,
 * processed and deleted through the other; readiness follows the blob storage.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { VertesiaClient } from '@vertesia/client';
import { POSTGRES_ONLY, createPgDatabase } from '../support/server.ts';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const KEY = 'sk-s3-cluster-admin-key-0123456789ab';

describe('postgres + S3: objects across two replicas', POSTGRES_ONLY, () => {
  let s3: TestS3;
  let a: ServerProcess;
  let b: ServerProcess;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  const client = (srv: ServerProcess) =>
    new VertesiaClient({ serverUrl: srv.url, storeUrl: srv.url, tokenServerUrl: `${srv.url}/api/v1`, apikey: KEY });

  before(async () => {
    s3 = await startS3('orrery-cluster');
    database = await createPgDatabase();
    const env = {
      ORRERY_DATABASE_URL: database.url,
      ORRERY_BLOB_URL: s3.blobUrl,
      ORRERY_ADMIN_KEY: KEY,
      ORRERY_SECRET: 'shared-s3-cluster-secret-0123456789',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
    await s3?.close();
  });

  it('uploads through A to S3, reads, processes, downloads and deletes through B', async () => {
    const ca = client(a);
    const cb = client(b);
    const text = 'Replicas share one bucket and one database.';
    const upload = await ca.objects.getUploadUrl({ name: 'note.txt', mime_type: 'text/plain' } as any);
    assert.match(
      upload.url,
      new RegExp(`^${s3.endpoint}/orrery-cluster/`),
      'the upload URL is presigned by S3, not served by Orrery',
    );
    const put = await fetch(upload.url, { method: 'PUT', body: text, headers: { 'content-type': 'text/plain' } });
    assert.equal(put.status, 200);
    const created = await ca.objects.create({
      name: 'note',
      content: { source: upload.id, type: 'text/plain', name: 'note.txt' },
    } as any);

    const seen = await cb.objects.retrieve(created.id);
    assert.equal(seen.name, 'note');
    const source = await cb.objects.getContentSource(created.id);
    // The object owns its content: the upload moved under .orrery/content/<object id>/ (issue 14).
    assert.match(
      source.source!,
      new RegExp(
        `^s3://[0-9a-z]+/\\.orrery/content/${created.id}/[0-9a-z]{26}/${upload.path.split('/').pop()!.replace('.', '\\.')}$`,
      ),
    );
    const { url } = await cb.files.getDownloadUrl(source.source!);
    assert.match(url, /X-Amz-Signature=/);
    assert.equal(await (await fetch(url)).text(), text);

    let status = '';
    for (let i = 0; i < 100 && status !== 'ready'; i++) {
      status = (await cb.objects.retrieve(created.id)).status;
      if (status !== 'ready') await sleep(100);
    }
    assert.equal(status, 'ready');
    assert.equal((await ca.objects.getObjectText(created.id)).text, text);

    const bad = await fetch(`${b.url}/api/v1/objects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'x',
        content: { source: 's3://' + upload.id.split('://')[1].replace(/\/[^/]+$/, '/never-uploaded.txt') },
      }),
    });
    assert.equal(bad.status, 400, 'a storage URI with no uploaded bytes is refused');

    await cb.objects.delete(created.id);
    let gone = 0;
    for (let i = 0; i < 50 && gone !== 404; i++) {
      gone = (await fetch(url)).status; // the bytes go right after the delete commits
      if (gone !== 404) await sleep(100);
    }
    assert.equal(gone, 404, 'the bytes are gone from the bucket');
  });

  it('is ready while the bucket answers', async () => {
    assert.equal((await fetch(`${a.url}/ready`)).status, 200);
    assert.equal((await fetch(`${b.url}/ready`)).status, 200);
  });
});
