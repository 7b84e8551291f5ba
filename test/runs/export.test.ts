/**
 * Issue 18, point 6: GET /runs/export streams the runs matching a Lucene query and the GET /runs
 * filters as JSON Lines or CSV, a keyset page at a time, on both databases. Checked: contents
 * and order (the order of every run list), the query and filters applied, formula injection
 * neutralised in CSV, a 5,000-run export arriving in chunks, backpressure (pages are read only
 * as the consumer takes them, and none after it goes away), bad input as 400s.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KyselyPlugin } from 'kysely';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { insertRuns } from '../../src/runs/search-index.ts';
import { encodeRun } from '../../src/runs/store.ts';
import { newId } from '../../src/db/ids.ts';
import type { RunDoc, RunRow } from '../../src/runs/model.ts';
import { EXPORT_COLUMNS, RunExporter } from '../../src/runs/export.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { parseCsv } from '../support/csv.ts';

const BULK = 5000;
const T0 = Date.parse('2025-01-01T00:00:00.000Z');

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: streaming export of runs`, () => {
    let srv: TestServer;
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    const executed: any[] = [];
    let bulk: RunRow[] = [];
    let otherKey: string;

    const exportOf = async (qs: string, token?: string) => {
      const res = await fetch(`${srv.url}/api/v1/runs/export?${qs}`, {
        headers: { authorization: `Bearer ${token ?? srv.adminKey}` },
      });
      return { res, text: await res.text() };
    };
    const jsonl = (text: string) =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));

    before(async () => {
      srv = await startTestServer(dialect);
      seeded = await seedEcho(srv);
      const inputs = [
        { text: 'alpha quarterly report', tags: ['=cmd|calc', 'plain'] },
        { text: 'beta', tags: ['@SUM(A1)'] },
        { text: 'gamma quarterly report', tags: ['plain'] },
      ];
      for (const x of inputs) {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: x.text },
          tags: x.tags,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        executed.push(r.body);
      }
      // Bulk runs, stored directly: older than the executed ones, one updated_at per second.
      const { db, dialect: d } = srv.orrery.database;
      const { account, project } = srv.orrery.bootstrap;
      const formulas = ['=1+1', '+SUM(A1:A9)', '-2+3', '@cmd', '\tTAB', '\rCR', 'line\n=2+2'];
      bulk = Array.from({ length: BULK }, (_, i) => {
        const at = new Date(T0 + i * 1000).toISOString();
        const doc: RunDoc = {
          result: [{ type: 'text', value: i < formulas.length ? formulas[i] : `bulk result ${i}` }],
          parameters: { i },
          prompt: [{ role: 'user', content: `bulk ${i}` }],
          config: { model: 'echo' },
          source: {
            type: 'api',
            label: 'apikey:t',
            principal_type: 'apikey',
            principal_id: 't',
            client_ip: '127.0.0.1',
          },
          ttl: 0,
          stream: false,
          interaction: { id: 'ix-bulk', name: 'Bulk' },
          environment: { id: 'env-bulk', name: 'Bulk env', provider: 'test' },
          account,
          project,
          created_by: 'apikey:t',
          ...(i % 10 === 0 ? { error: { code: 'provider_error', message: '=HYPERLINK("http://x")' } } : {}),
        };
        return {
          id: newId(),
          account_id: account.id,
          project_id: project.id,
          interaction_id: 'ix-bulk',
          environment_id: 'env-bulk',
          model_id: 'echo',
          status: i % 10 === 0 ? 'failed' : 'completed',
          parent_id: null,
          finish_reason: i % 10 === 0 ? null : 'stop',
          execution_time: i,
          token_prompt: 3,
          token_result: 4,
          token_total: 7,
          tags: i % 7 === 0 ? ['seventh'] : [],
          created_at: at,
          updated_at: at,
          doc,
          executor: null,
        } as RunRow;
      });
      for (let i = 0; i < bulk.length; i += 500) {
        await insertRuns(
          db,
          d,
          bulk.slice(i, i + 500).map((row) => ({ row, tags: row.tags as string[] })),
          (row) => encodeRun(d, row),
        );
      }
      // Another project with runs of its own.
      const other = await srv.api('POST', '/api/v1/projects', { name: 'Other' });
      otherKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: other.body.id })).body.value;
      const o = await seedEcho(srv, { token: otherKey });
      await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: o.interaction.id, data: { text: 'quarterly report elsewhere' } },
        otherKey,
      );
    });
    after(() => srv.close());

    it('JSONL: every run of the project, newest updated_at first, as GET /runs/:id?populate=false answers it', async () => {
      const { res, text } = await exportOf('format=jsonl');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^application\/x-ndjson/);
      assert.match(
        res.headers.get('content-disposition')!,
        /^attachment; filename="runs-[\w.-]+-\d{8}T\d{6}Z\.jsonl"$/,
      );
      const runs = jsonl(text);
      assert.equal(runs.length, BULK + executed.length);
      const expected = [...executed]
        .reverse()
        .map((r) => r.id)
        .concat([...bulk].reverse().map((r) => r.id));
      assert.deepEqual(
        runs.map((r) => r.id),
        expected,
      );
      const stored = await srv.api('GET', `/api/v1/runs/${executed[0].id}?populate=false`);
      assert.deepEqual(runs[executed.length - 1], stored.body);
      assert.deepEqual(runs[executed.length].result, [{ type: 'text', value: `bulk result ${BULK - 1}` }]);
    });

    it('applies the Lucene query and the GET /runs filters, and limit', async () => {
      const phrase = jsonl((await exportOf(`query=${encodeURIComponent('"quarterly report"')}`)).text);
      assert.deepEqual(
        phrase.map((r) => r.id),
        [executed[2].id, executed[0].id],
        'full text, only this project',
      );
      const failed = jsonl(
        (await exportOf(`query=${encodeURIComponent('status:failed AND execution_time:[0 TO 99]')}`)).text,
      );
      assert.deepEqual(
        failed.map((r) => r.parameters.i),
        [90, 80, 70, 60, 50, 40, 30, 20, 10, 0],
      );
      const tagged = jsonl((await exportOf('tag=seventh&status=failed&environment=env-bulk&limit=3')).text);
      assert.deepEqual(
        tagged.map((r) => r.parameters.i),
        [4970, 4900, 4830],
        'tag, status, environment and limit',
      );
      const both = jsonl(
        (await exportOf(`interaction=${seeded.interaction.id}&query=${encodeURIComponent('tags:plain')}`)).text,
      );
      assert.deepEqual(
        both.map((r) => r.id),
        [executed[2].id, executed[0].id],
      );
      const before = jsonl((await exportOf('anchorDate=2025-01-01T00:00:03.000Z&anchorDateDirection=before')).text);
      assert.deepEqual(
        before.map((r) => r.parameters.i),
        [2, 1, 0],
      );
      const none = await exportOf('limit=0&format=csv');
      assert.equal(none.text, `${[...EXPORT_COLUMNS.map((c) => c.name), 'scores'].join(',')}\r\n`);
      const theirs = jsonl((await exportOf('', otherKey)).text);
      assert.equal(theirs.length, 1);
    });

    it('CSV: documented columns, one row per run, formula cells neutralised', async () => {
      const { res, text } = await exportOf(
        `format=csv&query=${encodeURIComponent('execution_time:[0 TO 9] OR interaction:Echo')}`,
      );
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^text\/csv/);
      assert.match(res.headers.get('content-disposition')!, /^attachment; filename=".+\.csv"$/);
      const rows = parseCsv(text);
      const head = rows[0];
      assert.deepEqual(head, [
        'id',
        'created_at',
        'updated_at',
        'status',
        'interaction_id',
        'interaction_name',
        'environment_id',
        'environment_name',
        'provider',
        'model',
        'finish_reason',
        'execution_time_ms',
        'prompt_tokens',
        'result_tokens',
        'total_tokens',
        'cost_usd',
        'tags',
        'parent_id',
        'error_code',
        'error_message',
        'result',
        'parameters',
        'scores',
      ]);
      assert.equal(rows.length, 1 + 3 + 10);
      const byId = new Map(rows.slice(1).map((r) => [r[0], Object.fromEntries(head.map((h, i) => [h, r[i]]))]));
      const first = byId.get(executed[0].id)!;
      assert.equal(first.tags, "'=cmd|calc,plain", 'a tag cell starting with = is prefixed');
      assert.equal(byId.get(executed[1].id)!.tags, "'@SUM(A1)");
      assert.equal(first.result, 'Say: alpha quarterly report');
      assert.equal(first.interaction_name, 'Echo');
      assert.equal(first.environment_id, seeded.env.id);
      assert.equal(first.provider, 'test');
      assert.equal(first.prompt_tokens, String(executed[0].token_use.prompt));
      assert.equal(first.parameters, '{"text":"alpha quarterly report"}');
      const results = Object.fromEntries(bulk.slice(0, 7).map((r, i) => [i, byId.get(r.id)!.result]));
      assert.deepEqual(results, {
        0: "'=1+1",
        1: "'+SUM(A1:A9)",
        2: "'-2+3",
        3: "'@cmd",
        4: "'\tTAB",
        5: "'\rCR",
        6: "line\n'=2+2",
      });
      assert.equal(byId.get(bulk[0].id)!.error_message, `'=HYPERLINK("http://x")`);
      assert.equal(byId.get(bulk[0].id)!.status, 'failed');
      assert.equal(byId.get(bulk[1].id)!.execution_time_ms, '1');
      // No unescaped formula cell anywhere in the file.
      for (const r of rows.slice(1))
        for (const cell of r)
          for (const line of cell.split(/\r\n|\r|\n/)) assert.ok(!/^[=+\-@\t]/.test(line), JSON.stringify(cell));
    });

    it('streams a large export in chunks', async () => {
      const res = await fetch(`${srv.url}/api/v1/runs/export?format=csv`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), null, 'no length: the body is streamed');
      const reader = res.body!.getReader();
      let chunks = 0;
      let bytes = 0;
      let text = '';
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks++;
        bytes += value.length;
        text += decoder.decode(value, { stream: true });
      }
      assert.ok(chunks >= BULK / 500, `${chunks} chunks of ${bytes} bytes`);
      assert.equal(parseCsv(text).length, 1 + BULK + executed.length);
    });

    it('reads a page only when the consumer takes the previous one, and none after it goes away', async () => {
      const { db, dialect: d } = srv.orrery.database;
      let queries = 0;
      const counting: KyselyPlugin = {
        transformQuery: (a) => {
          queries++;
          return a.node;
        },
        transformResult: async (a) => a.result,
      };
      const exporter = new RunExporter(db.withPlugin(counting), d, 50);
      const { bootstrap } = srv.orrery;
      const p: Principal = {
        account: bootstrap.account,
        project: bootstrap.project,
        keyId: 'k',
        role: 'admin',
        via: 'apikey',
      };
      const { body } = await exporter.start(p, { format: 'jsonl' });
      assert.equal(queries, 1, 'the first page is read before the answer starts');
      await sleep(100);
      const idle = queries;
      assert.ok(idle <= 4, `${idle} pages read before anyone consumed the stream (buffer: 64 KiB)`);
      let lines = 0;
      for await (const chunk of body) {
        lines += String(chunk).split('\n').length - 1;
        if (lines >= 500) break; // leaving the loop destroys the stream, as a disconnect does
      }
      const atStop = queries;
      assert.ok(atStop >= 10 && atStop <= 20, `${atStop} pages read for ${lines} runs`);
      await sleep(100);
      assert.equal(queries, atStop, 'no page is read after the consumer went away');
      assert.ok(body.destroyed);

      // Through HTTP: a client that goes away mid-export leaves the server answering.
      const ac = new AbortController();
      const res = await fetch(`${srv.url}/api/v1/runs/export`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
        signal: ac.signal,
      });
      await res.body!.getReader().read();
      ac.abort();
      await sleep(50);
      assert.equal((await srv.api('GET', '/api/v1/runs?limit=1')).status, 200);
    });

    it('refuses a bad query with its position, and bad formats and limits', async () => {
      const syntax = await srv.api('GET', `/api/v1/runs/export?query=${encodeURIComponent('status:(completed')}`);
      assert.equal(syntax.status, 400);
      assert.equal(syntax.body.error, 'invalid_query');
      assert.deepEqual(
        { position: syntax.body.details.position, line: syntax.body.details.line, column: syntax.body.details.column },
        { position: 7, line: 1, column: 8 },
      );
      const unknown = await srv.api('GET', `/api/v1/runs/export?query=${encodeURIComponent('hello AND colour:red')}`);
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.details.field, 'colour');
      assert.equal(unknown.body.details.position, 10);
      for (const qs of ['format=xlsx', 'limit=1000001', 'limit=-1', 'status=done', 'offset=10', 'anchorDate=someday']) {
        const r = await srv.api('GET', `/api/v1/runs/export?${qs}`);
        assert.equal(r.status, 400, qs);
        assert.equal(typeof r.body.message, 'string');
      }
      assert.equal((await srv.api('GET', '/api/v1/runs/export', undefined, null)).status, 401);
    });
  });
}
