/**
 * Cancelling an async run: the official client's `store.workflows.cancel(workflowId, runId,
 * reason)`. An async run is its own workflow, so both ids name the run (runs/async.ts).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { NotFound } from '../util/errors.ts';
import type { RunService } from './service.ts';

/** Characters of a cancellation's reason (it goes into the run's error message). */
const MAX_REASON_LENGTH = 1000;

export const asyncRunRoutes: FastifyPluginAsyncTypebox<{ runs: RunService }> = async (app, { runs }) => {
  app.post(
    '/workflows/runs/:workflowId/:runId/actions/cancel',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Cancel an async run (the official client's workflows.cancel): a queued run fails `cancelled` at once, a running one at its next check (ORRERY_ASYNC_CANCEL_POLL), its provider call stopped",
        params: Type.Object({ workflowId: Type.String({ minLength: 1 }), runId: Type.String({ minLength: 1 }) }),
        body: Type.Optional(
          Type.Object(
            { reason: Type.Optional(Type.String({ maxLength: MAX_REASON_LENGTH })) },
            { additionalProperties: false },
          ),
        ),
        response: {
          200: Type.Object({ message: Type.String() }),
          ...errorResponses(400, 401, 403, 404, 409),
        },
      },
    },
    async (req) => {
      const { workflowId, runId } = req.params;
      // An async run's workflow id is its run id: any other pair names nothing.
      if (workflowId !== runId) throw new NotFound('workflow run', `${workflowId}/${runId}`);
      const now = await runs.cancelAsync(principalOf(req), runId, req.body?.reason ?? null);
      return {
        message: now
          ? `run ${runId} was cancelled before it started`
          : `the cancellation of run ${runId} was asked: it stops at its next check`,
      };
    },
  );
};
