/**
 * Independent evaluation of run search: a few thousand varied runs are written through the store
 * (the path the service takes, so the full-text index is filled the same way, updates included);
 * then hundreds of generated Lucene queries, filter combinations in both request shapes, and
 * facets go through HTTP, and the ids (in order) and bucket counts must equal what the reference
 * evaluator (query/lucene/evaluate.ts) and plain TypeScript compute over the same runs.
 *
 * ORRERY_SEARCH_SEED picks the data and queries (default fixed); ORRERY_SEARCH_RUNS and
 * ORRERY_SEARCH_QUERIES scale them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  compileMatcher,
  parseDateInterval,
  parseInstant,
  parseLucene,
  type MatchOptions,
} from '../../src/query/lucene/index.ts';
import type { RunRow } from '../../src/runs/model.ts';
import { nowIso } from '../../src/db/ids.ts';
import fc from 'fast-check';
import { malformed, noise, printQuery, wellFormed } from '../query/lucene-gen.ts';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import {
  DEFAULT_PATHS,
  ENVIRONMENTS,
  FINISH,
  INTERACTIONS,
  MODELS,
  STATUSES,
  TAGS,
  byRecency,
  docOfRow,
  generateRuns,
  randomQuery,
  rangeBuckets,
  rng,
  storeRuns,
  valueBuckets,
  vocabularyOf,
  type Rng,
  type Vocabulary,
} from './search-fixtures.ts';

const SEED = Number(process.env.ORRERY_SEARCH_SEED ?? 20240305);
// 1,500 runs: with the default seed every hand-written query that matched some runs out of 2,500
// still does (token_use.prompt:0 is the rarest), results still span pages of PAGE, and the
// generated queries match as often (184 of 300, against 185); each query costs the size of its answer.
const RUNS = Number(process.env.ORRERY_SEARCH_RUNS ?? 1500);
const QUERIES = Number(process.env.ORRERY_SEARCH_QUERIES ?? 300);
const PAGE = 1000;

type Doc = Record<string, unknown>;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: run search agrees with the reference evaluator (seed ${SEED}, ${RUNS} runs)`, () => {
    let srv: TestServer;
    let rows: RunRow[];
    let docs: Doc[];
    let vocab: Vocabulary;

    before(async () => {
      // The sweepers would fail the data set's old `created` runs (stream timeout) and its
      // `processing` ones: those are recorded as executed by another replica, alive for as long.
      srv = await startTestServer(dialect, { streamTimeoutSeconds: 1e9, replicaTimeoutSeconds: 86_400 });
      const { account, project } = srv.orrery.bootstrap;
      const r = rng(SEED);
      const { db, dialect: d } = srv.orrery.database;
      const executor = 'fixture-replica';
      await db
        .insertInto('replicas')
        .values({ id: executor, host: 'fixture', started_at: nowIso(), heartbeat_at: nowIso() })
        .execute();
      rows = (await storeRuns(db, d, r, generateRuns(r, RUNS, { account, project }, executor))).sort(byRecency);
      docs = rows.map(docOfRow);
      vocab = vocabularyOf(rows);
    });
    after(() => srv?.close());

    /** Every id the server answers, walking the pages. */
    const searchIds = async (body: Record<string, unknown>): Promise<string[]> => {
      const out: string[] = [];
      for (let offset = 0; ; offset += PAGE) {
        const res = await srv.api('POST', '/api/v1/runs/search', { ...body, limit: PAGE, offset });
        assert.equal(res.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
        assert.ok(Array.isArray(res.body), JSON.stringify(res.body).slice(0, 200));
        out.push(...res.body.map((x: { id: string }) => x.id));
        if (res.body.length < PAGE) return out;
      }
    };
    const expectIds = (test: (doc: Doc, i: number) => boolean) =>
      rows.filter((_, i) => test(docs[i], i)).map((x) => x.id);
    const matcher = (query: string, defaultPath?: string) => {
      const opts: MatchOptions = defaultPath ? { defaultPath } : {};
      return compileMatcher(parseLucene(query), opts);
    };

    const compare = (what: string, got: string[], want: string[], failures: string[]) => {
      if (got.length === want.length && got.every((id, i) => id === want[i])) return;
      const g = new Set(got);
      const w = new Set(want);
      failures.push(
        `${what}: got ${got.length}, want ${want.length}; extra ${JSON.stringify(got.filter((x) => !w.has(x)).slice(0, 3))}, ` +
          `missing ${JSON.stringify(want.filter((x) => !g.has(x)).slice(0, 3))}${got.length === want.length ? ' (order differs)' : ''}`,
      );
    };

    it(`answers ${QUERIES} generated Lucene queries with the evaluator's ids, in order`, async () => {
      const r = rng(SEED + 1);
      const failures: string[] = [];
      let nonEmpty = 0;
      for (let i = 0; i < QUERIES; i++) {
        const defaultPath = r.pick(DEFAULT_PATHS);
        const query = printQuery(randomQuery(r, vocab, defaultPath));
        const want = expectIds(matcher(query, defaultPath));
        if (want.length) nonEmpty++;
        const got = await searchIds({ query, ...(defaultPath ? { defaultQueryPath: defaultPath } : {}) });
        compare(`${query}${defaultPath ? ` (defaultQueryPath ${defaultPath})` : ''}`, got, want, failures);
        if (failures.length >= 10) break;
      }
      assert.deepEqual(failures, [], `seed ${SEED}`);
      assert.ok(nonEmpty > QUERIES / 3, `most queries should match something (${nonEmpty}/${QUERIES})`);
    });

    it("answers hand-written queries in every syntax form with the evaluator's ids", async () => {
      const failures: string[] = [];
      const id = rows[7].id;
      for (const query of [
        'hello',
        'HELLO',
        '"hello world"',
        '"Quarterly report"',
        'hel*',
        'h?llo',
        '*port',
        'caf?',
        'café',
        'CAFE',
        'été',
        '日本',
        'ΟΔΟΣ',
        'οδος',
        'οδο?',
        'İstanbul',
        'foo_bar',
        '"foo bar"',
        'a\\-b',
        'x42',
        '3.14',
        'e\u0301te\u0301',
        "don't",
        'summ*',
        'sum*it',
        '*ll*',
        'Ωmega',
        'straße',
        '"naïve K"',
        'status:completed',
        'status:Completed',
        'modelId:gpt*',
        'modelId:*4?',
        'model:GPT-4O',
        'tags:alpha',
        'tags:"a b"',
        'tags:x\\*y',
        'tags:x*y',
        'tags:(alpha OR beta)',
        'tags:a*',
        'interaction:Summarize',
        'interaction:ix-sum',
        'interaction:"Classify docs"',
        'environment:local',
        'environment:env-*',
        'NOT environment:*',
        '_exists_:environment',
        '_exists_:parent',
        `parent:${id}`,
        `id:${id}`,
        'finish_reason:stop',
        'tool_use.tool_name:get_weather',
        'tool_use.tool_name:get_*',
        'tool_use.tool_name:"a b"',
        '-tool_use.tool_name:search',
        '_exists_:tool_use.tool_name',
        'tool_use.tool_name:[a TO m]',
        'tool_use.tool_name:get_weather AND finish_reason:stop',
        '-finish_reason:stop',
        '!finish_reason:stop',
        'execution_time:[1000 TO 5000]',
        'execution_time:{1000 TO 5000}',
        'execution_time:>=10000',
        'execution_time:<100',
        'execution_time:[* TO 100]',
        'execution_time:[abc TO 5]',
        'token_use.total:>3000',
        'token_use.prompt:0',
        'updated_at:2024',
        'updated_at:2024-03',
        'updated_at:[2024-01-01 TO 2024-06-30]',
        'updated_at:>=2025-06-01T12:00',
        'updated_at:{2023-05-01T00:00:00Z TO 2023-06-01T00:00:00+02:00}',
        'created_at:<2023-02',
        'updated_at:2024-0*',
        'result:hello',
        'result:"hello world"',
        'result:hel*',
        'prompt:report',
        'prompt:*port',
        'result:[a TO m]',
        'prompt:{* TO "Say"}',
        '_exists_:result',
        '_exists_:prompt',
        'parameters.topic:report',
        'parameters.topic:"quarterly report"',
        'parameters.topic:rep*',
        'parameters.topic:r?port',
        'parameters.customer.id:c-1',
        'parameters.customer.id:"c 3"',
        'parameters.customer.name:hello',
        'parameters.count:3',
        'parameters.count:[1 TO 3]',
        'parameters.count:>2',
        'parameters.count:2.5',
        'parameters.flag:true',
        'parameters.flag:false',
        'parameters.items.sku:A-1',
        'parameters.items.sku:a*',
        'parameters.items.qty:4',
        'parameters.list:deep',
        'parameters.list:true',
        'parameters.list:3',
        '_exists_:parameters.weird',
        'parameters.weird.key:dotted',
        '_exists_:parameters.empty',
        'parameters:hello',
        'parameters.numstr:3',
        'parameters.numstr:[10 TO 4]',
        'config.model:gpt-4o',
        'config.model:gpt*',
        'config.temperature:0.7',
        'config.temperature:[0.1 TO 1]',
        'config.max_tokens:256',
        'config.model_options.stop:END',
        'config.stream:true',
        'source.type:cli',
        'source.principal_id:k?',
        '_exists_:config.model_options',
        'status:completed AND tags:alpha',
        'status:completed && NOT tags:alpha',
        'status:failed || modelId:llama3',
        '+status:completed -tags:beta hello',
        '+hello +world',
        'hello world',
        '(hello OR report) AND status:(completed OR failed)',
        'NOT (hello OR world)',
        '-hello',
        '*',
        '*:*',
        '',
        'hello~',
        'hello~2',
        'hello^3',
        '"hello world"~3',
        '(status:completed)^2',
        'execution_time:[1000 TO 5000]^2',
        '"quarterly report" AND execution_time:[100 TO 15000] AND (status:completed OR modelId:gpt-4o)',
      ]) {
        compare(query, await searchIds({ query }), expectIds(matcher(query)), failures);
      }
      for (const [query, defaultPath] of [
        ['alpha', 'tags'],
        ['hello', 'result'],
        ['2024', 'updated_at'],
        ['3000', 'token_use.total'],
        ['Summarize', 'interaction'],
        ['report', 'parameters.topic'],
        ['gpt*', 'config.model'],
        ['completed', 'status'],
        ['hello', 'parameters'],
      ] as const) {
        compare(
          `${query} @${defaultPath}`,
          await searchIds({ query, defaultQueryPath: defaultPath }),
          expectIds(matcher(query, defaultPath)),
          failures,
        );
      }
      assert.deepEqual(failures, []);
    });

    it("applies the interface's filters and the client's query object like plain TypeScript does", async () => {
      const r = rng(SEED + 2);
      const failures: string[] = [];
      const parents = rows.filter((x) => x.parent_id).map((x) => x.parent_id!);
      const date = () => r.pick(rows).updated_at.slice(0, r.pick([4, 7, 10, 19, 24]));
      for (let i = 0; i < 80; i++) {
        const query = r.chance(0.4) ? printQuery(randomQuery(r, vocab, undefined, 1)) : undefined;
        const base = query === undefined ? () => true : matcher(query);
        if (r.chance(0.5)) {
          const f: Record<string, unknown> = {};
          if (r.chance(0.3)) f.interaction = r.pick(INTERACTIONS).id;
          if (r.chance(0.3)) f[r.pick(['environemnt', 'environment'])] = r.pick(ENVIRONMENTS).id;
          if (r.chance(0.3)) f.status = r.pick(STATUSES);
          if (r.chance(0.3)) f.modelId = r.pick(MODELS);
          if (r.chance(0.3)) f.tags = r.some(TAGS, 2);
          if (r.chance(0.2)) f.parent = r.chance(0.5) ? false : r.pick(parents);
          if (r.chance(0.4))
            f.updated_at = Object.fromEntries(
              [r.pick(['lt', 'lte', 'gt', 'gte'] as const), ...r.some(['lt', 'lte', 'gt', 'gte'] as const, 1)].map(
                (k) => [k, date()],
              ),
            );
          const env = (f.environemnt ?? f.environment) as string | undefined;
          const upd = (f.updated_at ?? {}) as Record<string, string>;
          const want = expectIds(
            (d) =>
              base(d) &&
              (f.interaction === undefined || (d.interaction as { id: string }).id === f.interaction) &&
              (env === undefined || (d.environment as { id: string } | null)?.id === env) &&
              (f.status === undefined || d.status === f.status) &&
              (f.modelId === undefined || d.modelId === f.modelId) &&
              (f.tags === undefined || (f.tags as string[]).every((t) => (d.tags as string[]).includes(t))) &&
              (f.parent === undefined || (f.parent === false ? d.parent === undefined : d.parent === f.parent)) &&
              Object.entries(upd).every(([k, v]) => {
                const a = Date.parse(d.updated_at as string);
                const b = parseInstant(v)!;
                return k === 'lt' ? a < b : k === 'lte' ? a <= b : k === 'gt' ? a > b : a >= b;
              }),
          );
          compare(
            `filters ${JSON.stringify(f)} query ${query}`,
            await searchIds({ query, filters: f }),
            want,
            failures,
          );
        } else {
          const q: Record<string, unknown> = { ...(query !== undefined ? { query } : {}) };
          if (r.chance(0.3)) q.status = r.pick(STATUSES);
          if (r.chance(0.3)) q.interaction = r.pick(INTERACTIONS).id;
          if (r.chance(0.2)) q.environment = r.pick(ENVIRONMENTS).id;
          if (r.chance(0.3)) q.model = r.pick(MODELS);
          if (r.chance(0.3)) q.tags = r.some(TAGS, 2);
          if (r.chance(0.3)) q.exclude_tags = r.some(TAGS, 2);
          if (r.chance(0.2)) q.parent = r.some(parents, 2);
          if (r.chance(0.2)) q.is_root = true;
          if (r.chance(0.3)) q.start = date();
          if (r.chance(0.3)) q.end = date();
          if (r.chance(0.2)) q.finish_reason = r.pick(FINISH);
          if (r.chance(0.1))
            q.run_ids = rows
              .slice(0, 50)
              .filter(() => r.chance(0.3))
              .map((x) => x.id);
          const want = expectIds(
            (d) =>
              base(d) &&
              (q.status === undefined || d.status === q.status) &&
              (q.interaction === undefined || (d.interaction as { id: string }).id === q.interaction) &&
              (q.environment === undefined || (d.environment as { id: string } | null)?.id === q.environment) &&
              (q.model === undefined || d.modelId === q.model) &&
              (q.tags === undefined || (q.tags as string[]).every((t) => (d.tags as string[]).includes(t))) &&
              (q.exclude_tags === undefined ||
                !(q.exclude_tags as string[]).some((t) => (d.tags as string[]).includes(t))) &&
              (q.parent === undefined ||
                (q.parent as string[]).length === 0 ||
                (q.parent as string[]).includes(d.parent as string)) &&
              (q.is_root === undefined || d.parent === undefined) &&
              (q.start === undefined ||
                Date.parse(d.created_at as string) >= parseDateInterval(q.start as string)!.from) &&
              (q.end === undefined || Date.parse(d.created_at as string) < parseDateInterval(q.end as string)!.to) &&
              (q.finish_reason === undefined || d.finish_reason === q.finish_reason) &&
              (q.run_ids === undefined || (q.run_ids as string[]).includes(d.id as string)),
          );
          // Empty lists filter nothing.
          compare(`client query ${JSON.stringify(q)}`, await searchIds({ query: q }), want, failures);
        }
        if (failures.length >= 10) break;
      }
      assert.deepEqual(failures, [], `seed ${SEED}`);
    });

    it("counts facets (string, number, date; and the client's /runs/facets) like plain TypeScript does", async () => {
      const r = rng(SEED + 3);
      const failures: string[] = [];
      const stringFields = [
        'modelId',
        'status',
        'tags',
        'environment',
        'interaction',
        'finish_reason',
        'tool_use.tool_name',
      ];
      const ascending = (xs: (number | string)[]) => [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (let i = 0; i < 40; i++) {
        const query = r.chance(0.7) ? printQuery(randomQuery(r, vocab, undefined, 1)) : undefined;
        const test = query === undefined ? () => true : matcher(query);
        const matched = docs.filter((d) => test(d));
        const facets: Record<string, Record<string, unknown>> = {};
        const expected: Record<string, unknown> = {};
        for (let k = r.int(1, 4); k > 0; k--) {
          const name = `f${k}`;
          const kind = r.int(0, 2);
          if (kind === 0) {
            const path = r.pick(stringFields);
            const numBuckets = r.pick([undefined, 1, 2, 3, 10]);
            facets[name] = { type: 'string', path, ...(numBuckets ? { numBuckets } : {}) };
            expected[name] = { buckets: valueBuckets(matched, path, numBuckets ?? 10, false) };
          } else if (kind === 1) {
            let boundaries = ascending(r.some([0, 100, 1000, 2500, 5000, 10_000, 20_001], 4) as number[]);
            if (boundaries.length < 2) boundaries = [0, 5000];
            const def = r.chance(0.5) ? 'other' : undefined;
            facets[name] = { type: 'number', path: 'execution_time', boundaries, ...(def ? { default: def } : {}) };
            expected[name] = { buckets: rangeBuckets(matched, 'execution_time', boundaries, def) };
          } else {
            let boundaries = ascending(
              r.some(
                ['2023-01-01', '2023-07-01T12:00:00Z', '2024', '2024-06-15', '2025-01-01T00:00:00.000Z', '2026'],
                4,
              ) as string[],
            );
            if (boundaries.length < 2) boundaries = ['2023', '2025'];
            facets[name] = { path: 'updated_at', boundaries, ...(r.chance(0.5) ? { default: 'elsewhen' } : {}) };
            expected[name] = {
              buckets: rangeBuckets(matched, 'updated_at', boundaries, facets[name].default as string | undefined),
            };
          }
        }
        const onlyMeta = r.chance(0.5);
        const res = await srv.api('POST', '/api/v1/runs/search', { query, facets, onlyMeta, limit: 5 });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        try {
          assert.deepEqual(res.body.count, { total: matched.length });
          assert.deepEqual(res.body.facet, expected);
          if (onlyMeta) assert.equal(res.body.results, undefined);
          else
            assert.deepEqual(
              res.body.results.map((x: { id: string }) => x.id),
              expectIds((d) => test(d)).slice(0, 5),
            );
        } catch (err) {
          failures.push(`${query} ${JSON.stringify(facets)}: ${(err as Error).message.slice(0, 600)}`);
        }

        const fields = r.some([...stringFields], 5);
        if (fields.length) {
          const client = await srv.api('POST', '/api/v1/runs/facets', {
            facets: fields.map((f) => ({ name: `n_${f}`, field: f })),
            query: query === undefined ? {} : { query },
          });
          assert.equal(client.status, 200, JSON.stringify(client.body));
          const strip = (b: Record<string, unknown>) =>
            Object.fromEntries(
              Object.entries(b).map(([k, v]) => [
                k,
                Array.isArray(v) ? v.map(({ _id, count }) => ({ _id, count })) : v,
              ]),
            );
          const want = {
            ...Object.fromEntries(
              fields.map((f) => [`n_${f}`, valueBuckets(matched, f, 1000, f !== 'tags' && f !== 'tool_use.tool_name')]),
            ),
            total: matched.length,
          };
          try {
            assert.deepEqual(strip(client.body), want);
          } catch (err) {
            failures.push(`/runs/facets ${query} ${fields}: ${(err as Error).message.slice(0, 600)}`);
          }
        }
        if (failures.length >= 5) break;
      }
      assert.deepEqual(failures, [], `seed ${SEED}`);
    });

    it("answers random well-formed queries of the parser's grammar like the evaluator, and malformed ones with a 400 at a position", async () => {
      const failures: string[] = [];
      const queries = fc.sample(wellFormed, { seed: SEED, numRuns: 150 });
      for (const query of queries) {
        const res = await srv.api('POST', '/api/v1/runs/search', { query, limit: PAGE });
        assert.equal(res.status, 200, `${JSON.stringify(query)} → ${JSON.stringify(res.body)}`);
        compare(
          JSON.stringify(query),
          res.body.map((x: { id: string }) => x.id),
          expectIds(matcher(query)).slice(0, PAGE),
          failures,
        );
      }
      assert.deepEqual(failures, [], `seed ${SEED}`);
      for (const query of fc.sample(malformed, { seed: SEED, numRuns: 60 })) {
        const res = await srv.api('POST', '/api/v1/runs/search', { query });
        assert.equal(res.status, 400, `${JSON.stringify(query)} → ${res.status}`);
        assert.equal(res.body.error, 'invalid_query');
        assert.ok(res.body.details.position >= 0 && res.body.details.position <= query.length);
      }
      for (const query of fc.sample(noise, { seed: SEED, numRuns: 60 })) {
        const res = await srv.api('POST', '/api/v1/runs/search', { query });
        if (query.includes('\u0000')) {
          // No JSON string may hold NUL (no database text can): refused with the body, before parsing.
          assert.ok(
            res.status === 400 && res.body.error === 'bad_request' && /NUL/.test(res.body.message),
            `${JSON.stringify(query)} → ${res.status} ${JSON.stringify(res.body)}`,
          );
          continue;
        }
        assert.ok(
          res.status === 200 || (res.status === 400 && ['invalid_query', 'unknown_field'].includes(res.body.error)),
          `${JSON.stringify(query)} → ${res.status} ${JSON.stringify(res.body)}`,
        );
      }
    });

    it('pages through a query with no run missing or repeated', async () => {
      const query = 'NOT status:created';
      const want = expectIds(matcher(query));
      const seen: string[] = [];
      for (let offset = 0; offset < want.length + 50; offset += 37) {
        const res = await srv.api('POST', '/api/v1/runs/search', { query, limit: 37, offset });
        seen.push(...res.body.map((x: { id: string }) => x.id));
      }
      assert.deepEqual(seen, want);
    });
  });
}

export type { Rng };
