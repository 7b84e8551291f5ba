/** The OpenAI door's routes at /v1: chat completions (blocking and streamed), embeddings, models. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { principalOf } from '../../http/auth-hook.ts';
import { openSse } from '../../http/sse.ts';
import type { Principal } from '../../auth/principal.ts';
import type { Run } from '../../runs/model.ts';
import type { RunService } from '../../runs/service.ts';
import { ChunkWriter, toCompletion } from './answers.ts';
import { runFailure } from './errors.ts';
import {
  ChatCompletionAnswer,
  ChatCompletionBody,
  EmbeddingsAnswer,
  EmbeddingsBody,
  ModelsAnswer,
  chatErrors,
  readErrors,
} from './schemas.ts';
import type { ChatCall, OpenAIDoor } from './service.ts';

/** The door is at {origin}/v1, not under the document's /api/v1: its operations name the origin. */
const DOOR_SERVERS = [
  { url: '/', description: "The server's origin (OpenAI clients take {origin}/v1 as their base URL)" },
];

/** A comment line this often keeps an idle stream's proxies from closing it. */
const KEEP_ALIVE_MS = 15_000;

export const openAIRoutes: FastifyPluginAsyncTypebox<{ door: OpenAIDoor; runs: RunService }> = async (
  app,
  { door, runs },
) => {
  const caller = (req: { ip: string; headers: Record<string, unknown> }) => ({
    ip: req.ip,
    userAgent: req.headers['user-agent'] as string | undefined,
  });

  app.post(
    '/chat/completions',
    {
      schema: {
        tags: ['openai'],
        servers: DOOR_SERVERS,
        summary:
          'OpenAI Chat Completions: each call a run of sys:openai on the addressed environment and model (stream: true answers text/event-stream)',
        body: ChatCompletionBody,
        response: { 200: ChatCompletionAnswer, ...chatErrors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const call = await door.chat(p, req.body as Record<string, unknown>, caller(req), req.headers['x-orrery-tags']);
      reply.header('x-orrery-run-id', call.run.id);
      const created = Math.floor(Date.parse(call.run.created_at) / 1000);
      // A string with its type is sent as it is (no response serializer on the hot path).
      if (!call.stream)
        return reply
          .type('application/json')
          .send(JSON.stringify(toCompletion(call.run, call.model, created)) as never);
      return stream(p, runs, call, created, reply);
    },
  );

  app.post(
    '/embeddings',
    {
      schema: {
        tags: ['openai'],
        servers: DOOR_SERVERS,
        summary: 'OpenAI Embeddings (float or base64), recorded as a run of sys:openai (inputs, count and dimensions)',
        body: EmbeddingsBody,
        response: { 200: EmbeddingsAnswer, ...chatErrors },
      },
    },
    async (req, reply) => {
      const answer = await door.embeddings(
        principalOf(req),
        req.body as Record<string, unknown>,
        caller(req),
        req.headers['x-orrery-tags'],
      );
      return reply.type('application/json').send(JSON.stringify(answer) as never);
    },
  );

  app.get(
    '/models',
    {
      schema: {
        tags: ['openai'],
        servers: DOOR_SERVERS,
        summary: "OpenAI Models: every environment's models as <environment>/<model>",
        response: { 200: ModelsAnswer, ...readErrors },
      },
    },
    (req) => door.models(principalOf(req)),
  );
};

/**
 * A streamed call: the run's chunks as `chat.completion.chunk`s while it executes, then its tool
 * calls, its finish, its usage (stream_options.include_usage) and `[DONE]`. A run that fails
 * ends the stream with an error object, as OpenAI's does. A client that goes away stops only its
 * stream: the run goes on to its end and is stored.
 */
async function stream(p: Principal, runs: RunService, call: ChatCall, created: number, reply: FastifyReply) {
  const followed = await runs.follow(p, call.run.id);
  const chunks = new ChunkWriter(call.run.id, call.model, created, call.includeUsage);
  const sse = openSse(reply, KEEP_ALIVE_MS, { 'x-orrery-run-id': call.run.id });
  const send = (data: string) => sse.send({ data });
  let unsubscribe = () => {};
  sse.onClose(() => unsubscribe());
  send(chunks.head());
  const end = (run: Run | undefined) => {
    if (run) call.ended(run);
    if (!run || run.status !== 'completed') {
      // The run's own error, as a blocking call would have answered it.
      const error = run?.error ?? { code: 'run_failed', message: 'the run ended without its outcome' };
      send(JSON.stringify(runFailure(error.code, `run ${call.run.id} failed: ${error.message}`).body));
    } else {
      if (run.tool_use?.length) send(chunks.toolCalls(run.tool_use));
      send(chunks.finish(run));
      const usage = chunks.usage(run);
      if (usage) send(usage);
      send('[DONE]');
    }
    sse.end();
  };
  if (followed.finished) return end(followed.finished);
  if (!followed.live) {
    // Another process executes it (never for a run this one just created): poll to its end.
    const poll = async (): Promise<void> => {
      const done = await followed.poll?.().catch(() => undefined);
      if (done || sse.closed) return end(done);
      setTimeout(() => void poll(), 250);
    };
    return poll();
  }
  unsubscribe = followed.live.subscribe(0, (e) => {
    if (e.kind === 'chunk') send(chunks.text(e.text));
    else end(e.run as Run | undefined);
  });
}
