/**
 * A user message for an interactive agent (POST /runs/user-message whose `run` is the agent's run):
 * the agent's wait step ends with the message (its checkpoint), the agent is running again and its
 * job is queued; the answer is at once, `{runId, workflowId}`. A `run` that is not an agent's goes
 * on as a continuation (runs/continue.ts). Fields of the payload are applied or refused by name.
 */
import { scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, Conflict } from '../util/errors.ts';
import type { AgentStore } from './store.ts';

/** The longest user message an agent is given, in characters (docs/reference/limits.md). */
const MAX_AGENT_MESSAGE = 256 * 1024;

const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && Object.keys(v).length === 0);

/** The agent run named by `body.run`, if it is one; the message checked. */
export async function deliverMessage(
  store: AgentStore,
  p: Principal,
  body: Record<string, unknown>,
  wake: (runId: string) => Promise<void>,
): Promise<string | undefined> {
  const ref = body.run;
  const runId =
    typeof ref === 'string' ? ref : ref && typeof ref === 'object' ? (ref as { id?: unknown }).id : undefined;
  if (typeof runId !== 'string' || runId === '') return undefined;
  const s = scopeOf(p);
  const agent = await store.agent(s, runId);
  if (!agent) return undefined;
  for (const key of ['results', 'tools', 'options', 'conversation', 'strip_options'] as const)
    if (!isEmpty(body[key]))
      throw new BadRequest(
        `${key} does not apply to a message for agent ${runId}: the agent runs its own tools and options; leave it out`,
      );
  if (body.stream === true)
    throw new BadRequest(`stream: true does not apply to agent ${runId}: follow the agent with GET /runs/:id`);
  if (body.environment !== undefined)
    throw new BadRequest(`environment does not apply to agent ${runId}: it continues on its own; leave it out`);
  if (typeof body.message !== 'string' || body.message === '')
    throw new BadRequest('message is required: the text of the next user message');
  if (body.message.length > MAX_AGENT_MESSAGE)
    throw new BadRequest(`message has ${body.message.length} characters; at most ${MAX_AGENT_MESSAGE}`);
  if (agent.state !== 'waiting' || !agent.spec.interactive)
    throw new Conflict(
      `agent ${runId} is ${agent.state === 'ended' ? 'ended' : 'running'}: a message is delivered only while an interactive agent waits for one`,
    );
  const steps = await store.steps(runId);
  const wait = steps.at(-1);
  if (
    !wait ||
    wait.kind !== 'wait' ||
    wait.status !== 'started' ||
    !(await store.finish(runId, wait.seq, 'done', { message: body.message }))
  )
    throw new Conflict(`agent ${runId} took another message meanwhile: send yours once it waits again`);
  await store.setState(runId, 'waiting', 'running');
  await wake(runId);
  return runId;
}
