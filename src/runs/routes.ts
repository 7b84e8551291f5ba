/** Runs: execute (blocking and streamed), list, retrieve, stream. */
import { BadRequest } from '../util/errors.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import { openSse } from '../http/sse.ts';
import { sendWithVectors } from '../http/vector-json.ts';
import type { RunService } from './service.ts';
import {
  FilterOptionParams,
  FilterOptionsAnswer,
  RetrieveQuery,
  RunCreateBody,
  RunFacetsAnswer,
  RunFacetsBody,
  RunFindAnswer,
  RunFindBody,
  RunListQuery,
  RunExportQuery,
  RunSearchAnswer,
  RunSearchBody,
  StreamQuery,
  ToolResultsBody,
  UserMessageBody,
} from './schemas.ts';
import type { RunExporter, RunScores } from './export.ts';
import { populateOf, type RunFinder } from './find.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import type { CallerInfo } from './plan.ts';
import type { Metrics } from '../http/metrics.ts';
import { AsyncExecuteBody, asyncRequestOf } from './async-payload.ts';

const POLL_MS = 500;

const AsyncExecutionResult = Type.Object({
  runId: Type.String({ description: 'The run' }),
  workflowId: Type.String({ description: "The run's workflow id: the run's id (Orrery runs no Temporal workflows)" }),
});
/** The vectors of a run's creation answer, written by http/vector-json.ts rather than number by number. */
const RUN_VECTORS = ['input_embedding', 'result_embedding'] as const;

/** Agents (src/agents), once set: `type: "conversation"` on POST /execute/async, and their user messages. */
export interface ConversationAgents {
  /** Starts an agent: its run's id. */
  start(p: Principal, body: Record<string, unknown>, caller: CallerInfo): Promise<string>;
  /** A user message for the agent `body.run` names: its run's id; undefined when it names no agent. */
  deliver(p: Principal, body: Record<string, unknown>): Promise<string | undefined>;
}

export const runRoutes: FastifyPluginAsyncTypebox<{
  runs: RunService;
  finder: RunFinder;
  metrics: Metrics;
  exporter: RunExporter;
  /** The latest scores of runs (src/scores), answered with a run. */
  scoresOf?: RunScores;
  /** Absent: `type: "conversation"` is refused as before. */
  conversations: () => ConversationAgents | undefined;
}> = async (app, { runs, finder, metrics, exporter, scoresOf, conversations }) => {
  const caller = (req: { ip: string; headers: Record<string, unknown> }) => ({
    ip: req.ip,
    userAgent: req.headers['user-agent'] as string | undefined,
  });

  app.post(
    '/runs',
    {
      config: { readsRuns: false }, // reads a parent only once the runs answered before their commit are stored (RunService)
      schema: {
        tags: ['runs'],
        summary:
          'Execute an interaction: blocking (answers the completed run) or stream: true (answers at once with status created)',
        body: RunCreateBody,
        response: { 200: Type.Ref('Run'), ...errorResponses(400, 401, 404, 502) },
      },
    },
    async (req, reply) =>
      sendWithVectors(reply, await runs.create(principalOf(req), req.body as never, caller(req)), RUN_VECTORS),
  );

  app.post(
    '/execute',
    {
      config: { readsRuns: false }, // reads a parent only once the runs answered before their commit are stored (RunService)
      schema: {
        tags: ['runs'],
        summary:
          'Execute an interaction by endpoint selector: Name (latest published, else draft), Name@draft, Name@<version>, Name@<tag>',
        body: RunCreateBody,
        response: { 200: Type.Ref('Run'), ...errorResponses(400, 401, 404, 502) },
      },
    },
    async (req, reply) =>
      sendWithVectors(reply, await runs.executeByName(principalOf(req), req.body as never, caller(req)), RUN_VECTORS),
  );

  app.post(
    '/execute/async',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Execute an interaction in the background (the official client's executeAsync): answers at once with the run's id, also its workflow run id; follow it with GET /runs/:id or GET /runs/:id/stream",
        body: AsyncExecuteBody,
        response: { 200: AsyncExecutionResult, ...errorResponses(400, 401, 404, 413) },
      },
    },
    async (req) => {
      const body = req.body as Record<string, unknown>;
      const agents = body.type === 'conversation' ? conversations() : undefined;
      if (agents) {
        const runId = await agents.start(principalOf(req), body, caller(req));
        return { runId, workflowId: runId };
      }
      const { input, extras } = asyncRequestOf(body);
      const run = await runs.executeAsync(principalOf(req), input, caller(req), extras);
      return { runId: run.id, workflowId: run.id };
    },
  );

  for (const [path, kind, body, summary] of [
    [
      '/runs/tool-results',
      'tool-results',
      ToolResultsBody,
      "Continue a run with the results of its tool calls (the official client's runs.sendToolResults): a new run linked by previous_run, whose request is the whole history; blocking, or stream: true",
    ],
    [
      '/runs/user-message',
      'user-message',
      UserMessageBody,
      "Continue a run with a user message (the official client's runs.sendUserMessage), and the results still owed to its calls: a new run linked by previous_run; blocking, or stream: true",
    ],
  ] as const) {
    app.post(
      path,
      {
        config: { readsRuns: false }, // reads the run it continues once the runs answered before their commit are stored (runs/continue.ts)
        schema: {
          tags: ['runs'],
          summary,
          body,
          response: {
            // A message for a waiting agent (src/agents) is answered at once with the agent's run.
            200: kind === 'user-message' ? Type.Union([AsyncExecutionResult, Type.Ref('Run')]) : Type.Ref('Run'),
            ...errorResponses(400, 401, 404, 409, 413, 502),
          },
        },
      },
      async (req, reply) => {
        const body = req.body as Record<string, unknown>;
        const agents = kind === 'user-message' ? conversations() : undefined;
        const agentRun = agents ? await agents.deliver(principalOf(req), body) : undefined;
        if (agentRun) return { runId: agentRun, workflowId: agentRun };
        return sendWithVectors(reply, await runs.continueRun(principalOf(req), kind, body, caller(req)), RUN_VECTORS);
      },
    );
  }

  app.get(
    '/runs',
    {
      schema: {
        tags: ['runs'],
        summary: 'List runs of the project, newest updated_at first (ties by id), with the filters of the interface',
        querystring: RunListQuery,
        response: { 200: Type.Array(Type.Ref('RunRef')), ...errorResponses(400, 401) },
      },
    },
    (req) => runs.list(principalOf(req), req.query),
  );

  app.post(
    '/runs/search',
    {
      schema: {
        tags: ['runs'],
        summary:
          'Search runs: a Lucene query, filters and facets. Without facets: an array of run references; with facets: {count, facet} (onlyMeta) or {results, count, facet}',
        body: RunSearchBody,
        response: { 200: RunSearchAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => runs.search(principalOf(req), req.body as Record<string, unknown>),
  );

  app.post(
    '/runs/facets',
    {
      schema: {
        tags: ['runs'],
        summary: "Facets of runs (the official client's computeFacets): {<name>: [{_id, count}], total}",
        body: RunFacetsBody,
        response: { 200: RunFacetsAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => runs.facets(principalOf(req), req.body as Record<string, unknown>),
  );

  app.post(
    '/runs/find',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Find runs with a Mongo-style query (the official client's runs.find): stored runs, references as ids, projected by select, newest updated_at first",
        body: RunFindBody,
        response: { 200: RunFindAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => finder.find(scopeOf(principalOf(req)), req.body),
  );

  app.get(
    '/runs/filter-options/:field',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Distinct values of a run field among the runs matching the GET /runs filters, as [{id, name, count}] (the official client's runs.filterOptions)",
        params: FilterOptionParams,
        querystring: RunListQuery,
        response: { 200: FilterOptionsAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => finder.filterOptions(scopeOf(principalOf(req)), req.params.field, req.query),
  );

  app.get(
    '/runs/export',
    {
      schema: {
        tags: ['runs'],
        summary:
          'Export the runs matching a Lucene query and the GET /runs filters, newest updated_at first, streamed as JSON Lines (a run per line) or CSV (content-disposition: attachment); at most 1,000,000 runs',
        querystring: RunExportQuery,
        produces: ['application/x-ndjson', 'text/csv'],
        response: {
          200: Type.String({ description: 'application/x-ndjson or text/csv, streamed' }),
          ...errorResponses(400, 401),
        },
      },
    },
    async (req, reply) => {
      const { mime, filename, body } = await exporter.start(principalOf(req), req.query as Record<string, unknown>);
      return reply
        .type(mime)
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(body as never);
    },
  );

  app.get(
    '/runs/:id',
    {
      schema: {
        tags: ['runs'],
        summary: 'Retrieve a run, with interaction and environment expanded (populate=false: as stored)',
        params: IdParams,
        querystring: RetrieveQuery,
        response: { 200: Type.Ref('Run'), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const run = populateOf(req.query.populate)
        ? await runs.get(p, req.params.id)
        : await finder.stored(scopeOf(p), req.params.id);
      const scores = scoresOf && (await scoresOf.latest(scopeOf(p), [run.id])).get(run.id);
      // Added key first, the run spread after it (runs/search-index.ts, withColumns).
      return { scores: scores ?? {}, ...run };
    },
  );

  app.get(
    '/runs/:id/stream',
    {
      config: { queryToken: true },
      schema: {
        tags: ['runs'],
        summary:
          'Server-Sent Events of a run: message events (data: a JSON string chunk), then event close (data: the final run). Accepts ?access_token= and Last-Event-ID.',
        params: IdParams,
        querystring: StreamQuery,
        produces: ['text/event-stream'],
        response: { 200: Type.String({ description: 'text/event-stream' }), ...errorResponses(401, 404) },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const lastEventId = lastEventIdOf(req.headers['last-event-id'] ?? req.query.lastEventId);
      const followed = await runs.follow(p, req.params.id);
      const sse = openSse(reply);
      metrics.openStreams.inc();
      sse.onClose(() => metrics.openStreams.dec());
      const close = async (run: unknown) => {
        const final = run ?? (await runs.get(p, req.params.id).catch(() => ({ id: req.params.id, status: 'failed' })));
        sse.send({ event: 'close', data: JSON.stringify(final) });
        sse.end();
      };
      if (followed.finished) return close(followed.finished);
      if (followed.live) {
        const unsubscribe = followed.live.subscribe(lastEventId, (e) => {
          if (e.kind === 'chunk') sse.send({ id: e.seq, data: JSON.stringify(e.text) });
          else void close(e.run);
        });
        sse.onClose(unsubscribe);
        return;
      }
      // Never rejects: a failed poll counts as "not finished yet", and close() falls back on its own.
      const pollOnce = async () => {
        const done = await followed.poll!().catch(() => undefined);
        if (done) {
          clearInterval(timer);
          await close(done);
        }
      };
      const timer = setInterval(() => void pollOnce(), POLL_MS);
      sse.onClose(() => clearInterval(timer));
    },
  );
};

/** `Last-Event-ID` (or `?lastEventId=`): the number of the last chunk the client has, as our events carry it. */
function lastEventIdOf(value: unknown): number {
  if (value === undefined || value === '') return 0;
  const text = String(Array.isArray(value) ? value[0] : value).trim();
  if (!/^\d{1,15}$/.test(text))
    throw new BadRequest(
      `Last-Event-ID must be the number of a chunk (the id of a message event), got ${JSON.stringify(text.slice(0, 50))}`,
    );
  return Number(text);
}
