/**
 * Renders an interaction's prompt segments with the run's data into chat messages, after
 * validating the data against the interaction's input schema. As Vertesia's `renderPrompt` does,
 * a `chat` segment places the history found in the data (`data.chat`, or the key its
 * `configuration.chatKey` names) at its position, and a `tool` message is a tool result for the
 * call its `tool_use_id` names.
 */
import { BadRequest } from '../util/errors.ts';
import { TemplateError, type TemplateEngine } from '../templates/render.ts';
import { templateErrorCode } from '../interactions/prompts.ts';
import { boundErrorMessage } from '../util/error-message.ts';
import type { RunError } from './model.ts';
import { compileSchema, describeErrors } from '../interactions/json-schema.ts';
import { mergedPromptSchema } from '../interactions/params-schema.ts';
import type { InteractionDto } from '../interactions/interactions.ts';
import type { ChatMessage, ChatRole } from '../providers/driver.ts';
import type { SegmentDto } from '../interactions/interactions.ts';
import { table } from '../util/own.ts';
import { checkParts } from '../conversations/messages.ts';

/** Prompt roles of the interface mapped to chat roles; `negative` and `mask` are image-only. */
const CHAT_ROLE: Record<string, ChatRole | null> = table({
  system: 'system',
  safety: 'system',
  user: 'user',
  tool: 'tool',
  assistant: 'assistant',
  negative: null,
  mask: null,
});

export function validateInput(interaction: InteractionDto, data: unknown): void {
  const schema = interaction.interaction_schema;
  if (schema) {
    const validate = compileSchema(schema);
    if (!validate(data ?? {}))
      throw new BadRequest(
        `data does not match the input schema of interaction "${interaction.name}": ${describeErrors('data', validate.errors)}`,
        validate.errors,
      );
  }
  // Vertesia's wording, which @vertesia/workflow matches on to fail without retrying.
  const merged = mergedPromptSchema(interaction.prompts.map((s) => s.template));
  if (!merged) return;
  const validate = compileSchema(merged);
  if (!validate(data ?? {}))
    throw new BadRequest(
      `Failed to validate merged prompt schema of interaction "${interaction.name}": ${describeErrors('data', validate.errors)}`,
      validate.errors,
    );
}

/**
 * The interaction's template segments rendered with the run's data (and its model, jst's
 * `_model`) into chat messages. A template that fails throws its TemplateError: the run service
 * records the run as failed with it. `tenant` (the project) takes its turn in the template workers.
 */
async function buildMessages(
  templates: TemplateEngine,
  interaction: InteractionDto,
  data: unknown,
  model: string,
  tenant: string,
): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  for (const [i, segment] of interaction.prompts.entries()) {
    if (segment.type === 'chat') {
      messages.push(...chatHistory(segment, data, i));
      continue;
    }
    if (!segment.template) continue;
    const role = CHAT_ROLE[segment.template.role];
    if (!role) continue;
    const text = await templates.render(segment.template, data ?? {}, model, tenant);
    if (role !== 'tool') messages.push({ role, content: text });
    else messages.push(toolResult(text, toolUseIdOf(segment.configuration), `prompts[${i}] (a tool template)`));
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
        // The same data renders the same way: trying again cannot help.
        retryable: false,
      },
    };
  }
}

/** The key a chat segment reads, as Vertesia's `getChatKey`: `configuration.chatKey`, else `chat`. */
function chatKeyOf(configuration: unknown): string {
  const key = (configuration as { chatKey?: unknown } | null | undefined)?.chatKey;
  return typeof key === 'string' && key !== '' ? key : 'chat';
}

const toolUseIdOf = (configuration: unknown): unknown =>
  (configuration as { tool_use_id?: unknown } | null | undefined)?.tool_use_id;

function toolResult(content: string, toolUseId: unknown, where: string): ChatMessage {
  if (typeof toolUseId !== 'string' || toolUseId === '') {
    throw new BadRequest(
      `${where} has the tool role but no tool_use_id: a tool message answers the call whose id it names` +
        (where.includes('template') ? ' (set configuration.tool_use_id on the segment)' : ''),
    );
  }
  return { role: 'tool', content: [{ type: 'tool_result', tool_use_id: toolUseId, content }] };
}

/**
 * The messages a chat segment places. No history yet (the key absent) places nothing: a first turn.
 * A history that is not a list of `{role, content}` messages is the caller's to fix. A message's
 * content is text, or a list of parts (an assistant's `tool_use` calls, `tool_result`s) checked as
 * a conversation's are, so a caller can send back a tool loop's history.
 */
function chatHistory(segment: SegmentDto, data: unknown, index: number): ChatMessage[] {
  const key = chatKeyOf(segment.configuration);
  const value = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[key] : undefined;
  if (value === undefined || value === null) return [];
  const where = `data.${key}`;
  if (!Array.isArray(value)) {
    throw new BadRequest(
      `${where} must be a list of {role, content} messages: the chat segment prompts[${index}] places it`,
    );
  }
  const out: ChatMessage[] = [];
  for (const [i, m] of value.entries()) {
    const msg = m as { role?: unknown; content?: unknown; tool_use_id?: unknown } | null;
    if (
      msg === null ||
      typeof msg !== 'object' ||
      typeof msg.role !== 'string' ||
      (typeof msg.content !== 'string' && !Array.isArray(msg.content))
    ) {
      throw new BadRequest(`${where}[${i}] must be a message {role, content: string or a list of parts}`);
    }
    if (!Object.hasOwn(CHAT_ROLE, msg.role)) {
      throw new BadRequest(
        `${where}[${i}].role ${JSON.stringify(msg.role)} is not one of ${Object.keys(CHAT_ROLE).join(', ')}`,
      );
    }
    const role = CHAT_ROLE[msg.role];
    if (!role) continue; // negative and mask are image prompts
    if (Array.isArray(msg.content)) {
      out.push({ role, content: checkParts(msg.content, `${where}[${i}]`) });
      continue;
    }
    out.push(
      role === 'tool' ? toolResult(msg.content, msg.tool_use_id, `${where}[${i}]`) : { role, content: msg.content },
    );
  }
  return out;
}
