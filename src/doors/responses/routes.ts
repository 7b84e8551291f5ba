/** The Responses API's route: POST /v1/responses (blocking and streamed). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { principalOf } from '../../http/auth-hook.ts';
import { openSse } from '../../http/sse.ts';
import type { Principal } from '../../auth/principal.ts';
import type { Run } from '../../runs/model.ts';
import type { RunService } from '../../runs/service.ts';
import { ResponseEvents, statusOf, toResponse, type StreamEvent } from './answers.ts';
import { ResponseAnswer, ResponsesBody, responseErrors } from './schemas.ts';
import type { ResponsesCall, ResponsesDoor } from './service.ts';

const DOOR_SERVERS = [
  { url: '/', description: "The server's origin (OpenAI clients take {origin}/v1 as their base URL)" },
];

const KEEP_ALIVE_MS = 15_000;

export const responsesRoutes: FastifyPluginAsyncTypebox<{ door: ResponsesDoor; runs: RunService }> = async (
  app,
  { door, runs },
) => {
  app.post(
    '/responses',
    {
      schema: {
        tags: ['openai'],
        servers: DOOR_SERVERS,
        summary:
          'OpenAI Responses: each call a run of sys:responses; previous_response_id continues from that run (stream: true answers text/event-stream)',
        body: ResponsesBody,
        response: { 200: ResponseAnswer, ...responseErrors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const call = await door.create(
        p,
        req.body as Record<string, unknown>,
        { ip: req.ip, userAgent: req.headers['user-agent'] },
        req.headers['x-orrery-tags'],
      );
      reply.header('x-orrery-run-id', call.run.id);
      if (!call.stream)
        return reply
          .type('application/json')
          .send(JSON.stringify(toResponse(call.run, call.echo, statusOf(call.run))) as never);
      return stream(p, runs, call, reply);
    },
  );
};

/**
 * A streamed call: the Responses events while the run executes. A run that fails ends the stream
 * with response.failed. A client that goes away stops only its stream: the run goes on to its end.
 */
async function stream(p: Principal, runs: RunService, call: ResponsesCall, reply: FastifyReply) {
  const followed = await runs.follow(p, call.run.id);
  const events = new ResponseEvents(call.run.id, call.echo);
  const sse = openSse(reply, KEEP_ALIVE_MS, { 'x-orrery-run-id': call.run.id });
  const send = (list: StreamEvent[]) => {
    for (const e of list) sse.send(e);
  };
  let unsubscribe = () => {};
  sse.onClose(() => unsubscribe());
  send(events.start());
  const end = (run: Run | undefined) => {
    if (run && run.status === 'completed') send(events.end(run));
    else
      send(
        events.failed(
          run ?? {
            id: call.run.id,
            result: [],
            token_use: {},
            error: { code: 'run_failed', message: 'the run ended without its outcome' },
          },
        ),
      );
    sse.end();
  };
  if (followed.finished) return end(followed.finished);
  if (!followed.live) {
    const poll = async (): Promise<void> => {
      const done = await followed.poll?.().catch(() => undefined);
      if (done || sse.closed) return end(done);
      setTimeout(() => void poll(), 250);
    };
    return poll();
  }
  unsubscribe = followed.live.subscribe(0, (e) => {
    if (e.kind === 'chunk') send(events.delta(e.text));
    else end(e.run as Run | undefined);
  });
}
