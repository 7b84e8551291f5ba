/**
 * The official client's `interactions.requestSlot` (`POST /execute/rate-limit/request`): the
 * wait Vertesia's workflows take before executing, answered from Orrery's limits (limiter.ts).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { Principal } from '../auth/principal.ts';
import type { Limiter } from './limiter.ts';

const id = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 200, description }));

const SlotRequest = Type.Object(
  {
    interaction: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: 'An interaction id or selector; checked to exist',
    }),
    environment_id: id("Checked to name one of the project's environments; limits are per project and key"),
    model_id: id('Correlation only: limits are per project and key, not per model'),
    workflow_run_id: id('Correlation only (deprecated by Vertesia for rate_limit_id)'),
    rate_limit_id: id('Correlation only: Orrery counts the execution itself, not the admission'),
    modalities: Type.Optional(
      Type.Object({ hasVideo: Type.Boolean(), hasImage: Type.Boolean() }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

export interface SlotDeps {
  limiter: Limiter;
  /** Throws the 404 of an interaction (id or selector) or an environment the project does not have. */
  check(p: Principal, interaction: string, environment: string | undefined): Promise<void>;
}

export const slotRoutes: FastifyPluginAsyncTypebox<SlotDeps> = async (app, { limiter, check }) => {
  app.post(
    '/execute/rate-limit/request',
    {
      config: { peeksLimits: true },
      schema: {
        tags: ['limits'],
        summary:
          "How long to wait before executing (the official client's requestSlot): delay_ms is 0 while the key's and the project's limits have room, else the wait until their window turns; asking is not counted",
        body: SlotRequest,
        response: { 200: Type.Object({ delay_ms: Type.Integer() }), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      await check(p, req.body.interaction, req.body.environment_id);
      return { delay_ms: await limiter.slotDelay(p) };
    },
  );
};
