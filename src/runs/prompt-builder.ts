/**
 * Renders an interaction's prompt segments with the run's data into chat messages, after
 * validating the data against the interaction's input schema.
 */
import { BadRequest } from '../http/errors.ts';
import { renderTemplate, TemplateError } from '../templates/render.ts';
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
    throw new BadRequest(`data does not match the input schema of interaction "${interaction.name}": ${describeErrors('data', validate.errors)}`, validate.errors);
  }
}

export function buildMessages(interaction: InteractionDto, data: unknown): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const segment of interaction.prompts) {
    if (segment.type !== 'template' || !segment.template) continue; // `chat` marks conversation history: none yet
    const role = CHAT_ROLE[segment.template.role];
    if (!role) continue;
    let content: string;
    try {
      content = renderTemplate(segment.template, data ?? {});
    } catch (err) {
      if (err instanceof TemplateError) throw new BadRequest(err.message, { template: segment.template.name, kind: err.kind, path: err.path });
      throw err;
    }
    messages.push({ role, content });
  }
  if (!messages.length) {
    throw new BadRequest(`interaction "${interaction.name}" has no prompt template to render; add one to its prompts`);
  }
  return messages;
}
