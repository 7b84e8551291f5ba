/**
 * The official client's embeddings commands (activate, disable, recalculate) against a local
 * server speaking the OpenAI wire protocol, and files.setFileMetadata, on both databases.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { StreamSource } from '@vertesia/client';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { secondProject, upload } from '../objects/helpers.ts';
import { sleep, waitForEmbeddings } from './helpers.ts';

const MODEL = 'text-embedding-3-small';
const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: embeddings.activate / disable / recalculate and files.setFileMetadata`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let envId: string;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ models: [MODEL] });
      for (const [name, text] of Object.entries({ a: 'tides and moons', b: 'bread and flour', c: 'stock markets' })) {
        assert.equal(
          (await srv.api('POST', '/api/v1/objects', { name, text, properties: { topic: name } })).status,
          200,
        );
      }
      await waitForEmbeddings(srv, 3);
      envId = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Embeddings',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          apiKey: 'sk-test',
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    it('activate chooses the environment and model, and the project re-embeds with it', async () => {
      const client = srv.client();
      const r: any = await client.store.embeddings.activate('text' as any, { environment: envId, model: MODEL });
      assert.equal(r.status, 'enabled');
      assert.match(r.message, new RegExp(MODEL));
      const done = await waitForEmbeddings(srv, 3, 'text', undefined, MODEL);
      assert.equal(done.environment, envId);
      assert.equal(done.dimensions, 1536);
      assert.equal(done.enabled, true);
      const st: any = await client.store.embeddings.status('text' as any);
      assert.equal(st.model, MODEL);
      assert.ok(
        wire.requests.some((q) => q.path === '/v1/embeddings'),
        'the model was called on the wire',
      );
      // The project shows the same settings as PUT /projects/:id {embeddings} would.
      const project = await srv.api('GET', `/api/v1/projects/${srv.orrery.bootstrap.project.id}`);
      assert.equal(
        project.body.embeddings?.model ?? project.body.settings?.embeddings?.model,
        MODEL,
        JSON.stringify(project.body),
      );
    });

    it('disable turns a type off (no similarity search of it) and activate turns it back on', async () => {
      const client = srv.client();
      const some = (await srv.api('GET', '/api/v1/objects?limit=1')).body[0].id;
      const off: any = await client.store.embeddings.disable('properties' as any);
      assert.equal(off.status, 'disabled');
      const st: any = await client.store.embeddings.status('properties' as any);
      assert.equal(st.status, 'disabled');
      assert.equal(st.enabled, false);
      const refused = await srv.api('GET', `/api/v1/objects?similarTo=${some}&embeddingType=properties`);
      assert.equal(refused.status, 409);
      assert.match(refused.body.message, /properties embeddings are disabled/);
      // The other types are untouched.
      assert.equal((await srv.api('GET', `/api/v1/objects?similarTo=${some}`)).status, 200);
      // A new object gets no vector of the disabled type.
      const before = ((await client.store.embeddings.status('properties' as any)) as any).objectsWithEmbeddings;
      await srv.api('POST', '/api/v1/objects', { name: 'late', text: 'late text', properties: { topic: 'late' } });
      await waitForEmbeddings(srv, 4, 'text');
      assert.equal(((await client.store.embeddings.status('properties' as any)) as any).objectsWithEmbeddings, before);

      const on: any = await client.store.embeddings.activate('properties' as any, { environment: envId });
      assert.equal(on.status, 'enabled', 'the model already in use need not be named again');
      assert.equal(((await client.store.embeddings.status('properties' as any)) as any).enabled, true);
      assert.equal((await srv.api('GET', `/api/v1/objects?similarTo=${some}&embeddingType=properties`)).status, 200);
    });

    it('recalculate computes every vector of the type again, in the background', async () => {
      const client = srv.client();
      await waitForEmbeddings(srv, 4, 'text', undefined, MODEL);
      const calls = () => wire.requests.filter((q) => q.path === '/v1/embeddings').length;
      const before = calls();
      const r: any = await client.store.embeddings.recalculate('text' as any);
      assert.equal(r.status, 'processing');
      const until = Date.now() + 20_000;
      while (calls() < before + 4 && Date.now() < until) await sleep(50);
      assert.ok(calls() >= before + 4, `each of the 4 objects' text was embedded again (${calls() - before} calls)`);
      const done = await waitForEmbeddings(srv, 4, 'text', undefined, MODEL);
      assert.equal(done.embeddingRunsInProgress, 0);
    });

    it('refuses bad embeddings commands with a 4xx that says what to fix', async () => {
      const client = srv.client();
      await assert.rejects(client.store.embeddings.disable('sound' as any), status(400));
      await assert.rejects(client.store.embeddings.recalculate('sound' as any), status(400));
      await assert.rejects(
        client.store.embeddings.activate('text' as any, { environment: 'no-such-env', model: MODEL }),
        status(404),
      );
      const image = await srv.api('POST', '/api/v1/embeddings/image/recalculate');
      assert.equal(image.status, 409);
      assert.match(image.body.message, /no images/);
      const extra = await srv.api('POST', '/api/v1/embeddings/text/enable', {
        environment: envId,
        model: MODEL,
        surprise: 1,
      });
      assert.equal(extra.status, 400);
      await client.store.embeddings.disable('text' as any);
      const off = await srv.api('POST', '/api/v1/embeddings/text/recalculate');
      assert.equal(off.status, 409);
      assert.match(off.body.message, /activate/);
      await client.store.embeddings.activate('text' as any, { environment: envId });
    });

    it('files.setFileMetadata merges custom metadata that getMetadata answers', async () => {
      const client = srv.client();
      const file = await upload(srv, 'report.txt', 'hello', { type: 'text/plain' });
      const r: any = await client.files.setFileMetadata(file.id, { owner: 'ops', stage: 'draft' });
      assert.deepEqual(r, { success: true, file: file.id });
      let meta: any = await client.files.getMetadata(file.id);
      assert.deepEqual(meta.customMetadata, { owner: 'ops', stage: 'draft' });
      assert.equal(meta.size, 5);
      await client.files.setFileMetadata(file.path, { stage: 'final', ünïcode: 'värde' });
      meta = await client.files.getMetadata(file.id);
      assert.deepEqual(
        meta.customMetadata,
        { owner: 'ops', stage: 'final', ünïcode: 'värde' },
        'keys are merged, by URI or by key',
      );
      await client.files.setFileMetadata(file.id, { owner: null } as any);
      assert.deepEqual(
        ((await client.files.getMetadata(file.id)) as any).customMetadata,
        { stage: 'final', ünïcode: 'värde' },
        'null removes a key',
      );

      // New bytes at the same key start over.
      const again = await upload(srv, 'report.txt', 'hello again', { type: 'text/plain', id: file.path });
      assert.equal(again.id, file.id);
      assert.equal(((await client.files.getMetadata(file.id)) as any).customMetadata, undefined);
    });

    it('createFromExternalSource, memory packs, artifacts and executeByName work through the client', async () => {
      const client = srv.client();
      const stream = (text: string) => Readable.toWeb(Readable.from([Buffer.from(text)])) as any;
      const file = await upload(srv, 'external.txt', 'from elsewhere', { type: 'text/plain' });
      const created: any = await client.objects.createFromExternalSource(file.id, { name: 'External' } as any);
      assert.equal(created.name, 'External');
      assert.equal(created.content.type, 'text/plain');
      assert.equal(created.content.name, 'external.txt');

      await client.files.uploadMemoryPack(new StreamSource(stream('packed memory'), 'notes', 'application/gzip'));
      assert.deepEqual(
        ((await client.files.listByPrefix('memories/')) as any).files ?? (await client.files.listByPrefix('memories/')),
        ['memories/notes.tar.gz'],
      );
      const pack = await client.files.downloadMemoryPack('notes');
      assert.equal(await new Response(pack).text(), 'packed memory');

      await client.files.uploadArtifact(
        'run-1',
        'answer.json',
        new StreamSource(stream('{"ok":true}'), 'answer.json', 'application/json'),
      );
      const artifacts: any = await client.files.listArtifacts('run-1');
      assert.deepEqual(artifacts.files ?? artifacts, ['agents/run-1/answer.json']);
      assert.equal(
        await new Response(await client.files.downloadArtifact('run-1', 'answer.json')).text(),
        '{"ok":true}',
      );

      const { interaction } = await seedEcho(srv, { name: 'ByName' });
      const run: any = await client.interactions.executeByName(`${interaction.name}@draft`, {
        data: { text: 'by name' },
      });
      assert.equal(run.status, 'completed');
      assert.match(JSON.stringify(run.result), /by name/);
    });

    it('refuses bad file metadata with a 4xx and writes nothing', async () => {
      const client = srv.client();
      const file = await upload(srv, 'bounded.txt', 'x', { type: 'text/plain' });
      await client.files.setFileMetadata(file.id, { keep: 'me' });
      const many = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'v']));
      const tooMany = await srv.api('PUT', '/api/v1/files/metadata', { file: file.id, metadata: many });
      assert.equal(tooMany.status, 400);
      assert.match(tooMany.body.message, /at most 64/);
      const big = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`k${i}`, 'v'.repeat(4000)]));
      const tooBig = await srv.api('PUT', '/api/v1/files/metadata', { file: file.id, metadata: big });
      assert.equal(tooBig.status, 413);
      const notString = await srv.api('PUT', '/api/v1/files/metadata', { file: file.id, metadata: { n: 1 } });
      assert.equal(notString.status, 400);
      const proto = await srv.api('PUT', '/api/v1/files/metadata', {
        file: file.id,
        metadata: JSON.parse('{"constructor": "x"}'),
      });
      assert.equal(proto.status, 200, 'constructor is a plain key');
      assert.deepEqual(((await client.files.getMetadata(file.id)) as any).customMetadata, {
        keep: 'me',
        constructor: 'x',
      });
      await assert.rejects(client.files.setFileMetadata('no/such/file.txt', { a: 'b' }), status(404));
      await assert.rejects(
        client.files.setFileMetadata('../../etc/passwd', { a: 'b' }),
        (err: any) => err.status === 400 || err.status === 404,
      );
      const other = await secondProject(srv);
      const theirs = await srv.api('PUT', '/api/v1/files/metadata', { file: file.id, metadata: { a: 'b' } }, other.key);
      assert.ok(theirs.status === 400 || theirs.status === 404, `another project cannot touch it: ${theirs.status}`);
      assert.deepEqual(
        ((await client.files.getMetadata(file.id)) as any).customMetadata,
        { keep: 'me', constructor: 'x' },
        'nothing was written by the refused calls',
      );
    });
  });
}
