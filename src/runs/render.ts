/**
 * The render step of a run: its data validated against the interaction's input schema, then the
 * interaction's prompt segments rendered with that data into chat messages.
 */
import { BadRequest } from '../http/errors.ts';
import { TemplateError, type TemplateEngine } from '../templates/render.ts';
import { templateErrorCode } from '../interactions/prompts.ts';
import { boundErrorMessage } from '../util/error-message.ts';
import type { RunError } from './model.ts';
import { compileSchema, describeErrors } from '../interactions/json-schema.ts';
import type { InteractionDto } from '../interactions/interactions.ts';
import type { ChatMessage, ChatRole } from '../providers/driver.ts';
import { table } from '../util/own.ts';

/** Prompt roles of the interface mapped to chat roles; `negative` and `mask` are image-only. */
const CHAT_ROLE: Record<string, ChatRole | null> = table({
  system: 'system',
  safety: 'system',
  user: 'user',
  tool: 'user',
  assistant: 'assistant',
  negative: null,
  mask: null,
});

export function validateInput(interaction: InteractionDto, data: unknown): void {
  const schema = interaction.interaction_schema;
  if (!schema) return;
  const validate = compileSchema(schema);
  if (!validate(data ?? {})) {
    throw new BadRequest(
      `data does not match the input schema of interaction "${interaction.name}": ${describeErrors('data', validate.errors)}`,
      validate.errors,
    );
  }
}

/**
 * The interaction's template segments rendered with the run's data (and its model, jst's
 * `_model`) into chat messages. A template that fails throws its TemplateError: the run service
 * records the run as failed with it. `tenant` (the project) takes its turn in the template workers.
 */
export async function buildMessages(
  templates: TemplateEngine,
  interaction: InteractionDto,
  data: unknown,
  model: string,
  tenant: string,
): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  for (const segment of interaction.prompts) {
    if (segment.type !== 'template' || !segment.template) continue; // `chat` marks conversation history: none yet
    const role = CHAT_ROLE[segment.template.role];
    if (!role) continue;
    messages.push({ role, content: await templates.render(segment.template, data ?? {}, model, tenant) });
  }
  if (!messages.length) {
    throw new BadRequest(`interaction "${interaction.name}" has no prompt template to render; add one to its prompts`);
  }
  return messages;
}

/** The rendered prompt of a run, or the error of a template that failed on its data. */
export type RenderedPrompt = { messages: ChatMessage[]; failure?: undefined } | { messages: []; failure: RunError };

/**
 * The prompt of a run. A template that fails on the run's data fails the run, which is recorded
 * (runs/finish.ts, failOnTemplate), not the request's 400: its error is answered, not thrown.
 */
export async function renderPrompt(
  templates: TemplateEngine,
  interaction: InteractionDto,
  data: unknown,
  model: string,
  tenant: string,
): Promise<RenderedPrompt> {
  try {
    return { messages: await buildMessages(templates, interaction, data, model, tenant) };
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    return {
      messages: [],
      failure: {
        code: templateErrorCode(err),
        message: boundErrorMessage(err.message),
        ...(err.position ? { data: { line: err.position.line, column: err.position.column } } : {}),
      },
    };
  }
}
