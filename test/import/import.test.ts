/**
 * `orrery import` end to end: two real servers with their own databases (the source on SQLite,
 * the target on the dialect under test), the source seeded through the official client with
 * every kind, imported in local mode (the target's database, as the CLI does) and with --to.
 * Then: a second run copies nothing, a dry run changes nothing, an import cut off mid-object by
 * the source resumes with no duplicates.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { ORRERY_CLI } from '../support/processes.ts';
import { FlakyProxy, copiedOf, countsOf, runImport } from './helpers.ts';
import { processed } from '../objects/helpers.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const bytesOf = (i: number) => Buffer.from(`object ${i} `.repeat(2000 + i * 500));

async function seed(src: TestServer) {
  const c = src.client();
  const env: any = await c.environments.create({
    name: 'Offline',
    provider: 'test',
    default_model: 'echo',
    config: { note: 'kept' },
  } as any);
  const paid: any = await c.environments.create({
    name: 'OpenAI',
    provider: 'openai',
    default_model: 'gpt-4o-mini',
    apiKey: 'sk-source-secret-1234',
  } as any);
  const system: any = await c.prompts.create({
    name: 'system',
    role: 'system',
    content: 'You are terse.',
    content_type: 'text',
  } as any);
  const user: any = await c.prompts.create({
    name: 'ask',
    role: 'user',
    content: 'Say: {{text}}',
    content_type: 'handlebars',
    tags: ['p'],
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  } as any);
  const inter: any = await c.interactions.create({
    name: 'Echo Bot',
    status: 'draft',
    environment: env.id,
    model: 'echo',
    tags: ['demo'],
    prompts: [
      { type: 'template', template: system.id },
      { type: 'template', template: user.id },
    ],
    interaction_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  } as any);
  const v1: any = await c.interactions.publish(inter.id, { tags: ['stable'] } as any);
  const r1: any = await c.interactions.execute(inter.id, { data: { text: 'hello' }, tags: ['seed'] } as any);
  const r2: any = await c.interactions.executeByName('EchoBot@1', { data: { text: 'from v1' } } as any);
  await c.interactions.update(inter.id, {
    description: 'second',
    result_schema: { type: 'object', properties: { answer: { type: 'string' } } },
    temperature: 0.4,
    max_tokens: 64,
    restriction: 'STANDARD',
  } as any);
  const v2: any = await c.interactions.publish(inter.id, { tags: ['beta'] } as any);
  await c.interactions.update(inter.id, { description: 'the draft now' } as any);
  const type: any = await c.types.create({
    name: 'Note',
    object_schema: { type: 'object', properties: { n: { type: 'number' } } },
    tags: ['t'],
  } as any);
  const objects: any[] = [];
  for (let i = 0; i < 4; i++) {
    objects.push(
      await c.objects.create({
        name: `note-${i}.txt`,
        type: type.id,
        properties: { n: i },
        tags: ['seeded'],
        location: '/notes',
        content: new File([bytesOf(i)], `note-${i}.txt`, { type: 'text/plain' }),
      } as any),
    );
  }
  // Processing changes an object (status, text): let it end, so that the source stands still.
  for (const o of objects) await processed(src, o.id);
  objects.push(await c.objects.create({ name: 'record only', properties: { plain: true } } as any));
  return { env, paid, system, user, inter, v1, v2, type, objects, runs: [r1, r2] };
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: orrery import`, () => {
    let src: TestServer;
    let dst: TestServer;
    let seeded: Awaited<ReturnType<typeof seed>>;
    const proxy = new FlakyProxy();
    let from: string;

    before(async () => {
      from = await proxy.start();
      src = await startTestServer('sqlite', { publicUrl: from });
      proxy.upstream = src.url;
      dst = await startTestServer(dialect);
      seeded = await seed(src);
    });
    after(async () => {
      await dst?.close();
      await src?.close();
      await proxy.close();
    });

    it('copies every kind into the local database with references rewritten; a second run copies nothing', async () => {
      const first = await runImport(dst, {
        from,
        key: src.adminKey,
        include: 'environments,prompts,interactions,types,objects,runs',
      });
      assert.equal(first.code, 0, first.out);
      assert.deepEqual(countsOf(first.out, 'environments'), { copied: 2, skipped: 0, failed: 0 });
      assert.match(
        first.out,
        /Key needed[\s\S]*"OpenAI" \(openai\)/,
        'the environment whose key cannot be read is listed',
      );
      assert.doesNotMatch(first.out, /"Offline" \(test\)/);

      const c = dst.client();
      const envs: any[] = (await c.environments.list()) as any;
      const env = envs.find((e) => e.name === 'Offline');
      assert.ok(env && env.provider === 'test' && env.default_model === 'echo');
      assert.deepEqual(env.config, { note: 'kept' });
      assert.equal(envs.find((e) => e.name === 'OpenAI')?.has_api_key, false);

      const prompts: any[] = (await c.prompts.list()) as any;
      const ask = prompts.find((p) => p.name === 'ask');
      const system = prompts.find((p) => p.name === 'system');
      assert.ok(ask && system);
      const askFull: any = await c.prompts.retrieve(ask.id);
      assert.equal(askFull.content, 'Say: {{text}}');
      assert.deepEqual(askFull.inputSchema, { type: 'object', properties: { text: { type: 'string' } } });

      const inters: any[] = (await c.interactions.list()) as any;
      assert.equal(inters.length, 1);
      const draft: any = await c.interactions.retrieve(inters[0].id);
      assert.equal(draft.name, 'Echo Bot');
      assert.equal(draft.endpoint, 'EchoBot');
      assert.equal(draft.description, 'the draft now');
      assert.equal(draft.environment, env.id, 'the environment points at the copy');
      assert.deepEqual(
        draft.prompts.map((s: any) => s.template.id),
        [system.id, ask.id],
        'the segments point at the copied prompts',
      );
      assert.deepEqual(draft.interaction_schema, seeded.inter.interaction_schema);
      assert.deepEqual(draft.result_schema, { type: 'object', properties: { answer: { type: 'string' } } });
      assert.deepEqual(draft.tags, ['demo']);
      assert.deepEqual([draft.temperature, draft.max_tokens, draft.restriction], [0.4, 64, 'STANDARD']);
      const versions: any[] = (await c.interactions.listVersions(draft.id)) as any;
      assert.deepEqual(versions.map((v) => [v.version, v.tags]).sort(), [
        [1, ['stable']],
        [2, ['beta']],
      ]);
      const v1: any = await c.interactions.retrieve(versions.find((v) => v.version === 1).id);
      assert.equal(v1.result_schema, undefined, 'version 1 had no result schema');
      assert.equal(v1.temperature, undefined, 'nor a temperature');
      assert.equal(v1.environment, env.id);
      assert.deepEqual(
        v1.prompts.map((s: any) => s.template.content),
        ['You are terse.', 'Say: {{text}}'],
      );
      const v2: any = await c.interactions.retrieve(versions.find((v) => v.version === 2).id);
      assert.equal(v2.description, 'second');
      assert.deepEqual([v2.temperature, v2.max_tokens, v2.restriction], [0.4, 64, 'STANDARD']);
      // The copy runs: version 1 by its tag, on the copied environment.
      const ran: any = await c.interactions.executeByName('EchoBot@stable', { data: { text: 'copied' } } as any);
      assert.equal(ran.status, 'completed');

      const types: any[] = (await c.types.list()) as any;
      const note = types.find((t) => t.name === 'Note');
      assert.ok(note);
      assert.deepEqual(((await c.types.retrieve(note.id)) as any).object_schema, seeded.type.object_schema);

      const objects: any[] = (await c.objects.list({ limit: 100 })) as any;
      assert.equal(objects.length, 5);
      for (let i = 0; i < 4; i++) {
        const item = objects.find((o) => o.name === `note-${i}.txt`);
        const o: any = await c.objects.retrieve(item.id);
        assert.equal(o.type?.id ?? o.type, note.id, 'the type points at the copy');
        assert.deepEqual(o.properties, { n: i });
        assert.equal(o.location, '/notes');
        const { url } = await c.objects.getDownloadUrl(o.content.source);
        assert.deepEqual(Buffer.from(await (await fetch(url)).arrayBuffer()), bytesOf(i), `content of note-${i}`);
      }
      assert.ok(objects.find((o) => o.name === 'record only'));

      const runs: any[] = (await c.runs.list({ limit: 100 } as any)) as any;
      assert.equal(runs.length, 3, 'two copied runs and the one run here');
      const copied = await Promise.all(runs.map((r) => c.runs.retrieve(r.id) as Promise<any>));
      const hello = copied.find((r) => r.parameters?.text === 'hello');
      assert.ok(hello, 'the run on the draft was copied');
      assert.equal(hello.interaction.id, draft.id, "the run's interaction is the copy");
      assert.equal(hello.environment.id, env.id);
      assert.deepEqual(hello.tags, ['seed']);
      assert.equal(hello.created_at, seeded.runs[0].created_at, 'a copied run keeps its dates');
      assert.deepEqual(hello.result, ((await src.client().runs.retrieve(seeded.runs[0].id)) as any).result);
      const fromV1 = copied.find((r) => r.parameters?.text === 'from v1');
      assert.equal(fromV1.interaction.id, v1.id, 'a run of a published version points at the copied version');

      const second = await runImport(dst, {
        from,
        key: src.adminKey,
        include: 'environments,prompts,interactions,types,objects,runs',
      });
      assert.equal(second.code, 0, second.out);
      for (const kind of ['environments', 'prompts', 'interactions', 'types', 'objects', 'runs']) {
        assert.equal(countsOf(second.out, kind).copied, 0, `${kind}: nothing copied again\n${second.out}`);
      }
      assert.equal(((await c.objects.list({ limit: 100 })) as any[]).length, 5);
      assert.equal(((await c.interactions.listVersions(draft.id)) as any[]).length, 2);
    });

    it('environments set-key sets the key an import could not copy (CLI, key on standard input)', async () => {
      const envs: any[] = (await dst.client().environments.list()) as any;
      const openai = envs.find((e) => e.name === 'OpenAI');
      assert.equal(openai.has_api_key, false);
      const child = spawn(process.execPath, [...ORRERY_CLI, 'environments', 'set-key', 'OpenAI'], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          ORRERY_LOG_LEVEL: 'silent',
          ORRERY_DATA_DIR: dst.dataDir,
          ...(dst.databaseUrl ? { ORRERY_DATABASE_URL: dst.databaseUrl } : {}),
        },
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.stdin.end('sk-target-key-5678\n');
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      assert.equal(code, 0, out);
      assert.match(out, /API key set/);
      const after: any = await dst.client().environments.retrieve(openai.id);
      assert.equal(after.has_api_key, true);
      assert.match(after.apikey_hint ?? '', /5678/);
    });

    it('copies only what changed, and a dry run lists it and changes nothing', async () => {
      const s = src.client();
      await s.prompts.create({ name: 'new one', role: 'user', content: 'hi', content_type: 'text' } as any);
      await s.interactions.publish(seeded.inter.id, { tags: ['stable'] } as any); // v3 takes the tag off v1
      const before = await dst.api('GET', '/api/v1/prompts');

      const dry = await runImport(dst, { from, key: src.adminKey, 'dry-run': true });
      assert.equal(dry.code, 0, dry.out);
      assert.match(dry.out, /Would copy:[\s\S]*create prompt "new one"/);
      assert.match(dry.out, /update interaction "Echo Bot"/);
      assert.equal(countsOf(dry.out, 'objects').copied, 0);
      assert.deepEqual((await dst.api('GET', '/api/v1/prompts')).body, before.body, 'a dry run changes nothing');

      const again = await runImport(dst, { from, key: src.adminKey });
      assert.equal(again.code, 0, again.out);
      assert.deepEqual(countsOf(again.out, 'prompts'), { copied: 1, skipped: 2, failed: 0 });
      assert.equal(countsOf(again.out, 'interactions').copied, 1);
      const c = dst.client();
      const draft: any = ((await c.interactions.list()) as any[])[0];
      const versions: any[] = (await c.interactions.listVersions(draft.id)) as any;
      assert.deepEqual(versions.map((v) => [v.version, v.tags]).sort(), [
        [1, []],
        [2, ['beta']],
        [3, ['stable']],
      ]);
    });

    it('--to a running server: an import cut off mid-object by the source resumes with no duplicates', async () => {
      // A second project of the target, written through HTTP with an admin key of that project.
      const project = await dst.api('POST', '/api/v1/projects', { name: `remote-${dialect}` });
      const key = await dst.api('POST', '/api/v1/apikeys', {
        name: 'importer',
        role: 'admin',
        project: project.body.id,
      });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const flags = {
        from,
        key: src.adminKey,
        to: dst.url,
        'to-key': key.body.value,
        include: 'environments,prompts,interactions,types,objects',
      };

      proxy.downloads = 0;
      proxy.failDownloadsAfter = 2;
      const cut = await runImport(dst, flags);
      proxy.failDownloadsAfter = Infinity;
      assert.equal(cut.code, 1, cut.out);
      const firstTry = countsOf(cut.out, 'objects');
      assert.equal(firstTry.failed, 2, cut.out);
      assert.match(cut.out, /Failed:[\s\S]*note-/);
      const c = dst.client(key.body.value);
      const partial: any[] = (await c.objects.list({ limit: 100 })) as any;
      assert.equal(partial.length, 3, 'two objects with content and the record were copied; the cut ones were not');
      for (const o of partial) {
        if (!o.name.startsWith('note-')) continue;
        const full: any = await c.objects.retrieve(o.id);
        const { url } = await c.objects.getDownloadUrl(full.content.source);
        assert.deepEqual(
          Buffer.from(await (await fetch(url)).arrayBuffer()),
          bytesOf(Number(o.name[5])),
          'no copy points at partial content',
        );
      }

      const resumed = await runImport(dst, flags);
      assert.equal(resumed.code, 0, resumed.out);
      assert.deepEqual(countsOf(resumed.out, 'objects'), { copied: 2, skipped: 3, failed: 0 });
      const all: any[] = (await c.objects.list({ limit: 100 })) as any;
      assert.equal(all.length, 5);
      assert.equal(new Set(all.map((o) => o.name)).size, 5, 'no duplicates');
      const inters: any[] = (await c.interactions.list()) as any;
      assert.equal(inters.length, 1);
      assert.equal(((await c.interactions.listVersions(inters[0].id)) as any[]).length, 3);
      // The first project's copies are untouched by the second project's import.
      assert.equal(((await dst.client().objects.list({ limit: 100 })) as any[]).length, 5);
    });

    it('into another project of the local database: a dry run first, then the copy, and no key is made for it', async () => {
      const project = await dst.api('POST', '/api/v1/projects', { name: `local-other-${dialect}` });
      assert.equal(project.status, 200, JSON.stringify(project.body));
      const keysBefore = (await dst.api('GET', '/api/v1/apikeys')).body.length;
      const flags = { from, key: src.adminKey, project: project.body.name, include: 'prompts' };
      const dry = await runImport(dst, { ...flags, 'dry-run': true });
      assert.equal(dry.code, 0, dry.out);
      const copied = await runImport(dst, flags);
      assert.equal(copied.code, 0, copied.out);
      assert.ok(copiedOf(copied.out, 'prompts') > 0, copied.out);
      const token = (await dst.api('POST', '/api/v1/token/issue', { project: project.body.id })).body.token;
      const there = (await dst.api('GET', '/api/v1/prompts', undefined, token)).body as any[];
      assert.equal(there.length, copiedOf(copied.out, 'prompts'));
      assert.equal(
        (await dst.api('GET', '/api/v1/apikeys')).body.length,
        keysBefore,
        'the import acted with a token, not a new key',
      );
    });

    it('GET /import/links answers in bounded pages, in (kind, source id) order, for admin keys only', async () => {
      const source = 'https://paging.example';
      for (const [kind, id] of [
        ['object', 'b'],
        ['object', 'a'],
        ['prompt', 'a'],
        ['environment', 'z'],
      ]) {
        const put = await dst.api('PUT', '/api/v1/import/links', {
          source,
          link: { kind, source_id: id, target_id: `t-${kind}-${id}`, source_version: null },
        });
        assert.equal(put.status, 200, JSON.stringify(put.body));
      }
      const page = (q: string) => dst.api('GET', `/api/v1/import/links?source=${encodeURIComponent(source)}&${q}`);
      const first = await page('limit=2');
      assert.deepEqual(
        first.body.map((l: any) => [l.kind, l.source_id]),
        [
          ['environment', 'z'],
          ['object', 'a'],
        ],
      );
      const second = await page('limit=2&after_kind=object&after_id=a');
      assert.deepEqual(
        second.body.map((l: any) => [l.kind, l.source_id]),
        [
          ['object', 'b'],
          ['prompt', 'a'],
        ],
      );
      assert.equal((await page('limit=10001')).status, 400);
      assert.equal((await page('after_kind=object')).status, 400);
      const reader = await dst.api('POST', '/api/v1/apikeys', { name: 'links reader', role: 'reader' });
      assert.equal(
        (
          await dst.api(
            'GET',
            `/api/v1/import/links?source=${encodeURIComponent(source)}`,
            undefined,
            reader.body.value,
          )
        ).status,
        403,
      );
    });
  });
}
