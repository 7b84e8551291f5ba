/** What the experiment tests share: two published versions of an echo interaction, a dataset, a wait. */
import assert from 'node:assert/strict';
import type { TestServer } from '../support/server.ts';
import { seedEcho } from '../support/server.ts';

/**
 * An interaction of the `test` provider published twice: version 1 answers `Say: <text>`, version
 * 2 `Answer: <text>` (the echo model answers its prompt verbatim, words counted as tokens).
 */
export async function twoVersions(srv: TestServer, name: string, token = srv.adminKey) {
  const { interaction } = await seedEcho(srv, { name, token });
  const v1 = await srv.api('POST', `/api/v1/interactions/${interaction.id}/publish`, {}, token);
  assert.equal(v1.status, 200, JSON.stringify(v1.body));
  const prompt = await srv.api(
    'POST',
    '/api/v1/prompts',
    { name: 'answer prompt', role: 'user', content: 'Answer: {{text}}', content_type: 'handlebars' },
    token,
  );
  const changed = await srv.api(
    'PUT',
    `/api/v1/interactions/${interaction.id}`,
    { prompts: [{ type: 'template', template: prompt.body.id }] },
    token,
  );
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  const v2 = await srv.api('POST', `/api/v1/interactions/${interaction.id}/publish`, {}, token);
  assert.equal(v2.status, 200, JSON.stringify(v2.body));
  return { draft: interaction.id as string, v1: v1.body.id as string, v2: v2.body.id as string };
}

export async function dataset(
  srv: TestServer,
  name: string,
  items: Array<{ data: Record<string, unknown>; expected?: unknown }>,
  token = srv.adminKey,
): Promise<string> {
  const ds = await srv.api('POST', '/api/v1/datasets', { name }, token);
  assert.equal(ds.status, 200, JSON.stringify(ds.body));
  const added = await srv.api('POST', `/api/v1/datasets/${ds.body.id}/items`, { items }, token);
  assert.equal(added.status, 200, JSON.stringify(added.body));
  return ds.body.id;
}

export async function evaluator(srv: TestServer, body: Record<string, unknown>, token = srv.adminKey) {
  const r = await srv.api('POST', '/api/v1/evaluators', body, token);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id as string;
}

/** Polls the experiment until it is in one of `statuses` (a generous cap, never a guessed sleep). */
export async function until(srv: TestServer, id: string, statuses: string[], token = srv.adminKey, capMs = 120_000) {
  const end = Date.now() + capMs;
  for (;;) {
    const r = await srv.api('GET', `/api/v1/experiments/${id}`, undefined, token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (statuses.includes(r.body.status)) return r.body;
    if (Date.now() > end)
      throw new Error(`experiment ${id} still ${r.body.status} (${JSON.stringify(r.body.progress)}) after ${capMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
