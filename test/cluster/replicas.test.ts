/**
 * Several replicas on one PostgreSQL: a run created on one streams through another, several
 * subscribers follow one execution, and killing the executing replica mid-stream ends the run
 * `failed` (executor_lost) instead of leaving it `processing`.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { POSTGRES_ONLY, createPgDatabase } from '../support/server.ts';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';
import { openStream } from '../support/sse.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const KEY = 'sk-cluster-test-admin-key-0123456789';
const WORDS = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');

describe('postgres: two replicas on one database', POSTGRES_ONLY, () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let s3: TestS3;
  let interaction: string;
  // The scale-out deployment: one PostgreSQL, one S3-compatible bucket, two replicas.
  const env = () => ({
    ORRERY_DATABASE_URL: database.url,
    ORRERY_BLOB_URL: s3.blobUrl,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    ORRERY_ADMIN_KEY: KEY,
    ORRERY_SECRET: 'shared-cluster-secret-0123456789',
    ORRERY_REPLICA_TIMEOUT: '3',
  });
  const api = async (srv: ServerProcess, method: string, path: string, body?: unknown) => {
    const r = await fetch(srv.url + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const stream = (srv: ServerProcess, id: string, headers: Record<string, string> = {}) =>
    openStream(`${srv.url}/api/v1/runs/${id}/stream?access_token=${KEY}`, headers);
  const text = (events: Array<{ event: string; data: string }>) =>
    events
      .filter((e) => e.event === 'message')
      .map((e) => JSON.parse(e.data))
      .join('');

  before(async () => {
    s3 = await startS3('orrery-runs-cluster');
    database = await createPgDatabase();
    [a, b] = await Promise.all([startServerProcess(env()), startServerProcess(env())]);
    const e = await api(a, 'POST', '/api/v1/environments', {
      name: 'slow',
      provider: 'test',
      default_model: 'echo',
      config: { chunk_delay_ms: 60 },
    });
    const ix = await api(a, 'POST', '/api/v1/interactions', {
      name: 'Cluster',
      environment: e.body.id,
      prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } }],
    });
    interaction = ix.body.id;
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
    await s3?.close();
  });

  it('streams through replica B a run created on replica A', async () => {
    const run = await api(a, 'POST', '/api/v1/runs', { interaction, data: { text: WORDS }, stream: true });
    const events = await (await stream(b, run.body.id)).all();
    assert.equal(text(events), WORDS);
    assert.equal(JSON.parse(events.at(-1)!.data).status, 'completed');
    assert.equal((await api(a, 'GET', `/api/v1/runs/${run.body.id}`)).body.status, 'completed');
  });

  it('gives subscribers on B the whole stream while A executes it', async () => {
    const run = await api(a, 'POST', '/api/v1/runs', { interaction, data: { text: WORDS }, stream: true });
    const onA = await stream(a, run.body.id); // A claims and executes
    const first = await onA.next();
    assert.equal(first?.event, 'message');
    const [restA, onB1, onB2] = await Promise.all([
      onA.all(),
      stream(b, run.body.id).then((s) => s.all()),
      stream(b, run.body.id).then((s) => s.all()),
    ]);
    assert.equal(text([first!, ...restA]), WORDS);
    assert.equal(text(onB1), WORDS, 'B replays what A produced before it came, then follows live');
    assert.equal(text(onB2), WORDS);
    assert.deepEqual(
      onB1.filter((e) => e.event === 'message').map((e) => e.id),
      onB1.filter((e) => e.event === 'message').map((_, i) => String(i + 1)),
    );
    assert.equal(JSON.parse(onB1.at(-1)!.data).status, 'completed');
  });

  it("answers on B from the result cache that A filled (issue 16): the cache is the database's", async () => {
    const e = await api(a, 'POST', '/api/v1/environments', { name: 'cached', provider: 'test', default_model: 'echo' });
    const ix = await api(a, 'POST', '/api/v1/interactions', {
      name: 'Cached across replicas',
      environment: e.body.id,
      cache_policy: { type: 'cache', ttl: 600, varies_on: [], refresh_probability: 0 },
      prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } }],
    });
    const first = await api(a, 'POST', '/api/v1/runs', { interaction: ix.body.id, data: { text: 'shared answer' } });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.cached, undefined);
    const onB = await api(b, 'POST', '/api/v1/runs', { interaction: ix.body.id, data: { text: 'shared answer' } });
    assert.equal(onB.status, 200, JSON.stringify(onB.body));
    assert.equal(onB.body.cached, true);
    assert.equal(onB.body.cached_from, first.body.id);
    assert.deepEqual(onB.body.result, first.body.result);
  });

  it('fails a run whose executing replica is killed mid-stream, and B closes the stream with it', async () => {
    const run = await api(a, 'POST', '/api/v1/runs', { interaction, data: { text: WORDS }, stream: true });
    const onA = await stream(a, run.body.id);
    const seen = [await onA.next(), await onA.next(), await onA.next()];
    // The client reconnects to B (as behind a load balancer) after the third chunk.
    const onB = await stream(b, run.body.id, { 'last-event-id': seen[2]!.id! });
    const next = await onB.next();
    assert.equal(next?.id, '4', 'B resumes after Last-Event-ID from the stored chunks');
    await a.kill();
    const rest = await onB.all();
    const close = rest.at(-1)!;
    assert.equal(close.event, 'close');
    const final = JSON.parse(close.data);
    assert.equal(final.status, 'failed');
    assert.equal(final.error.code, 'executor_lost');
    const stored = await api(b, 'GET', `/api/v1/runs/${run.body.id}`);
    assert.equal(stored.body.status, 'failed');
  });
});
