/** The Anthropic door's routes: POST /v1/messages (blocking and streamed) and POST /v1/messages/count_tokens. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { principalOf } from '../../http/auth-hook.ts';
import { openSse } from '../../http/sse.ts';
import type { Principal } from '../../auth/principal.ts';
import type { Run } from '../../runs/model.ts';
import type { RunService } from '../../runs/service.ts';
import { StreamWriter, toMessage, type StreamEvent } from './answers.ts';
import { runFailure } from './errors.ts';
import { CountTokensAnswer, CountTokensBody, MessageAnswer, MessagesBody, messageErrors } from './schemas.ts';
import type { AnthropicDoor, MessagesCall } from './service.ts';

/** The door is at {origin}/v1, not under the document's /api/v1: its operations name the origin. */
const DOOR_SERVERS = [
  { url: '/', description: "The server's origin (Anthropic clients take the origin as their base URL)" },
];

/** Whether the request's cache_control breakpoints reached the provider (docs/guides/gateway.md). */
const PROMPT_CACHE_HEADER = 'x-orrery-prompt-cache';

/** A ping this often keeps an idle stream's proxies from closing it. */
const KEEP_ALIVE_MS = 15_000;

export const anthropicRoutes: FastifyPluginAsyncTypebox<{ door: AnthropicDoor; runs: RunService }> = async (
  app,
  { door, runs },
) => {
  app.post(
    '/messages',
    {
      schema: {
        tags: ['anthropic'],
        servers: DOOR_SERVERS,
        summary:
          'Anthropic Messages: each call a run of sys:anthropic on the addressed environment and model (stream: true answers text/event-stream)',
        body: MessagesBody,
        response: { 200: MessageAnswer, ...messageErrors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const call = await door.messages(
        p,
        req.body as Record<string, unknown>,
        { ip: req.ip, userAgent: req.headers['user-agent'] },
        req.headers['x-orrery-tags'],
      );
      reply.header('x-orrery-run-id', call.run.id);
      if (call.promptCache) reply.header(PROMPT_CACHE_HEADER, call.promptCache);
      if (!call.stream)
        return reply.type('application/json').send(JSON.stringify(toMessage(call.run, call.model)) as never);
      return stream(p, runs, call, reply);
    },
  );

  app.post(
    '/messages/count_tokens',
    {
      schema: {
        tags: ['anthropic'],
        servers: DOOR_SERVERS,
        summary: 'Anthropic token counting: an estimate by Orrery, no provider call and no run',
        body: CountTokensBody,
        response: { 200: CountTokensAnswer, ...messageErrors },
      },
    },
    (req) => door.countTokens(principalOf(req), req.body as Record<string, unknown>),
  );
};

/**
 * A streamed call: Anthropic's events while the run executes. A run that fails ends the stream
 * with an `error` event, as Anthropic's does. A client that goes away stops only its stream: the
 * run goes on to its end and is stored.
 */
async function stream(p: Principal, runs: RunService, call: MessagesCall, reply: FastifyReply) {
  const followed = await runs.follow(p, call.run.id);
  const writer = new StreamWriter(call.run.id, call.model);
  const sse = openSse(reply, KEEP_ALIVE_MS, {
    'x-orrery-run-id': call.run.id,
    ...(call.promptCache ? { [PROMPT_CACHE_HEADER]: call.promptCache } : {}),
  });
  const send = (events: StreamEvent[]) => {
    for (const e of events) sse.send(e);
  };
  let unsubscribe = () => {};
  sse.onClose(() => unsubscribe());
  send(writer.start());
  const end = (run: Run | undefined) => {
    if (run) call.ended(run);
    if (!run || run.status !== 'completed') {
      const error = run?.error ?? { code: 'run_failed', message: 'the run ended without its outcome' };
      const f = runFailure(error.code, `run ${call.run.id} failed: ${error.message}`);
      send([StreamWriter.error(f.body.error.type, f.body.error.message)]);
    } else send(writer.end(run));
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
  const stopThinking = followed.live.subscribeThinking((b) => send(writer.thinking(b)));
  const unsubscribeText = followed.live.subscribe(0, (e) => {
    if (e.kind === 'chunk') send(writer.text(e.text));
    else end(e.run as Run | undefined);
  });
  unsubscribe = () => {
    stopThinking();
    unsubscribeText();
  };
}
