/**
 * Anthropic Messages requests in Orrery's terms: `system` and `messages` as the parts model of
 * providers/driver.ts (text, images, documents, tool calls and their results, signed thinking),
 * `tools` and `tool_choice` as a run's tool definitions. Every refusal names the field at fault
 * with Anthropic's dotted paths (`messages.2.content.0.source`).
 */
import type { CacheControl, ChatMessage, ContentPart, ToolChoice } from '../../providers/driver.ts';
import { AnthropicRequestError, unsupported } from './errors.ts';

type Json = Record<string, unknown>;

/** Bounds on a request (besides the body's 16 MiB). */
const MAX_MESSAGES = 2048;
const MAX_TOOLS = 128;
const MAX_STOP_SEQUENCES = 16;
/** A base64 image or document, decoded, at most this many bytes (Anthropic's own request limit is 32 MB). */
const MAX_MEDIA_BYTES = 20 * 1024 * 1024;

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const invalid = (message: string) => new AnthropicRequestError(message);

/** Keys a block may carry beyond its own: `cache_control`, a prompt-cache breakpoint, is read by cacheOf. */
function checkKeys(block: Json, at: string, allowed: readonly string[]): void {
  for (const key of Object.keys(block))
    if (key !== 'type' && key !== 'cache_control' && !allowed.includes(key))
      throw invalid(`${at}.${key}: Extra inputs are not permitted`);
}

/** A block's `cache_control` ({type: "ephemeral", ttl?: "5m" | "1h"}), checked; undefined when absent. */
export function readCacheControl(value: unknown, at: string): CacheControl | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value) || value.type !== 'ephemeral')
    throw invalid(`${at}: expected {type: "ephemeral", ttl?: "5m" | "1h"}`);
  for (const key of Object.keys(value))
    if (key !== 'type' && key !== 'ttl') throw invalid(`${at}.${key.slice(0, 64)}: Extra inputs are not permitted`);
  if (value.ttl === undefined || value.ttl === null) return { type: 'ephemeral' };
  if (value.ttl !== '5m' && value.ttl !== '1h') throw invalid(`${at}.ttl: Input should be '5m' or '1h'`);
  return { type: 'ephemeral', ttl: value.ttl };
}

/** The part with the block's cache breakpoint, when it has one. */
function cached<T extends ContentPart>(part: T, b: Json, at: string): T {
  const c = readCacheControl(b.cache_control, `${at}.cache_control`);
  return c ? { ...part, cache_control: c } : part;
}

/** `system`: a string or text blocks, as one system message. */
export function readSystem(value: unknown): ChatMessage | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value ? { role: 'system', content: value } : undefined;
  if (!Array.isArray(value)) throw invalid('system: Input should be a valid string or a list of text blocks');
  const parts = value.map((b, i) => {
    const at = `system.${i}`;
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string')
      throw invalid(`${at}: system takes text blocks {type: "text", text}`);
    checkKeys(b, at, ['text']);
    const part: ContentPart = { type: 'text', text: b.text };
    return cached(part, b, at);
  });
  // Blocks with a cache breakpoint stay blocks (a Claude provider is sent them so); otherwise one text.
  if (parts.some((p) => p.cache_control)) return { role: 'system', content: parts };
  const text = parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n\n');
  return text ? { role: 'system', content: text } : undefined;
}

/** The messages of a request, checked: a `tool_result` answers a `tool_use` of an earlier assistant turn. */
export function readMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0)
    throw invalid('messages: Input should be a non-empty list of messages');
  if (value.length > MAX_MESSAGES) throw invalid(`messages: ${value.length} messages; at most ${MAX_MESSAGES}`);
  const out: ChatMessage[] = [];
  const calls = new Set<string>();
  for (const [i, m] of value.entries()) {
    const at = `messages.${i}`;
    if (!isObject(m)) throw invalid(`${at}: expected an object {role, content}`);
    for (const key of Object.keys(m))
      if (key !== 'role' && key !== 'content') throw invalid(`${at}.${key}: Extra inputs are not permitted`);
    if (m.role !== 'user' && m.role !== 'assistant')
      throw invalid(
        `${at}.role: Input should be 'user' or 'assistant' (system text goes in the top-level system field)`,
      );
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (!Array.isArray(m.content)) throw invalid(`${at}.content: Input should be a string or a list of content blocks`);
    const parts = m.content.map((b, j) => {
      const where = `${at}.content.${j}`;
      const part = readBlock(b, where, m.role as 'user' | 'assistant', calls);
      if (part.type === 'thinking') {
        if (isObject(b) && b.cache_control !== undefined && b.cache_control !== null)
          throw invalid(
            `${where}.cache_control: thinking blocks cannot be cached directly; put the breakpoint on a later block`,
          );
        return part;
      }
      return cached(part, b as Json, where);
    });
    if (m.role === 'assistant') {
      out.push({ role: 'assistant', content: parts });
      continue;
    }
    // Tool results go first, as their own turn (every driver maps a tool turn to its provider's shape).
    const results = parts.filter((p) => p.type === 'tool_result');
    const rest = parts.filter((p) => p.type !== 'tool_result');
    if (results.length) out.push({ role: 'tool', content: results });
    if (rest.length) out.push({ role: 'user', content: rest });
  }
  return out;
}

function readBlock(b: unknown, at: string, role: 'user' | 'assistant', calls: Set<string>): ContentPart {
  if (!isObject(b) || typeof b.type !== 'string') throw invalid(`${at}: expected a content block {type, …}`);
  switch (b.type) {
    case 'text':
      checkKeys(b, at, ['text', 'citations']);
      if (typeof b.text !== 'string') throw invalid(`${at}.text: Input should be a valid string`);
      if (b.citations !== undefined && b.citations !== null && !(Array.isArray(b.citations) && !b.citations.length))
        throw unsupported(`${at}.citations`, 'citations are not relayed; send the text alone');
      return { type: 'text', text: b.text };
    case 'image':
    case 'document':
      if (role !== 'user') throw invalid(`${at}: ${b.type} blocks go in user messages`);
      return mediaBlock(b, at);
    case 'tool_use': {
      if (role !== 'assistant') throw invalid(`${at}: tool_use blocks go in assistant messages`);
      checkKeys(b, at, ['id', 'name', 'input']);
      if (typeof b.id !== 'string' || !b.id) throw invalid(`${at}.id: Field required`);
      if (typeof b.name !== 'string' || !b.name) throw invalid(`${at}.name: Field required`);
      if (!isObject(b.input)) throw invalid(`${at}.input: Input should be a valid dictionary`);
      calls.add(b.id);
      return { type: 'tool_use', id: b.id, tool_name: b.name, tool_input: b.input };
    }
    case 'tool_result': {
      if (role !== 'user') throw invalid(`${at}: tool_result blocks go in user messages`);
      checkKeys(b, at, ['tool_use_id', 'content', 'is_error']);
      const id = b.tool_use_id;
      if (typeof id !== 'string' || !id) throw invalid(`${at}.tool_use_id: Field required`);
      if (!calls.has(id))
        throw invalid(
          `${at}.tool_use_id: "${id}" answers no tool_use block of an earlier assistant message; each tool_result must have a corresponding tool_use`,
        );
      if (b.is_error !== undefined && typeof b.is_error !== 'boolean')
        throw invalid(`${at}.is_error: Input should be a valid boolean`);
      return {
        type: 'tool_result',
        tool_use_id: id,
        content: resultText(b.content, `${at}.content`),
        ...(b.is_error ? { is_error: true } : {}),
      };
    }
    case 'thinking':
      if (role !== 'assistant') throw invalid(`${at}: thinking blocks go in assistant messages`);
      checkKeys(b, at, ['thinking', 'signature']);
      if (typeof b.thinking !== 'string') throw invalid(`${at}.thinking: Input should be a valid string`);
      if (typeof b.signature !== 'string') throw invalid(`${at}.signature: Field required`);
      return { type: 'thinking', text: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      if (role !== 'assistant') throw invalid(`${at}: redacted_thinking blocks go in assistant messages`);
      checkKeys(b, at, ['data']);
      if (typeof b.data !== 'string' || !b.data) throw invalid(`${at}.data: Field required`);
      return { type: 'thinking', text: '', redacted: b.data };
    default:
      throw unsupported(
        `${at}.type`,
        `${JSON.stringify(b.type)} blocks; the door takes text, image, document, tool_use, tool_result, thinking and redacted_thinking`,
      );
  }
}

/** A tool result's content: a string or text blocks (joined). */
function resultText(content: unknown, at: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${at}: Input should be a string or a list of text blocks`);
  return content
    .map((c, k) => {
      if (isObject(c) && c.type === 'text' && typeof c.text === 'string') {
        checkKeys(c, `${at}.${k}`, ['text']);
        return c.text;
      }
      throw unsupported(`${at}.${k}`, 'tool results carry text blocks only');
    })
    .join('\n');
}

/** An image or document by base64 data, URL, or (documents) plain text. */
function mediaBlock(b: Json, at: string): ContentPart {
  checkKeys(b, at, b.type === 'document' ? ['source', 'title', 'context', 'citations'] : ['source']);
  if (b.type === 'document') {
    if (b.context !== undefined && b.context !== null)
      throw unsupported(`${at}.context`, 'put the context in a text block beside the document');
    if (isObject(b.citations) && b.citations.enabled === true)
      throw unsupported(`${at}.citations`, 'citations are not relayed');
    if (b.title !== undefined && b.title !== null && typeof b.title !== 'string')
      throw invalid(`${at}.title: Input should be a valid string`);
  }
  const s = b.source;
  if (!isObject(s) || typeof s.type !== 'string') throw invalid(`${at}.source: Field required`);
  const title = typeof b.title === 'string' && b.title ? { name: b.title } : {};
  switch (s.type) {
    case 'base64': {
      const type = typeof s.media_type === 'string' ? s.media_type.toLowerCase() : '';
      const allowed = b.type === 'image' ? IMAGE_TYPES.has(type) : type === 'application/pdf';
      if (!allowed)
        throw invalid(
          `${at}.source.media_type: ${b.type === 'image' ? "'image/jpeg', 'image/png', 'image/gif' or 'image/webp'" : "'application/pdf'"} expected`,
        );
      const data = s.data;
      if (typeof data !== 'string' || !data || !/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 === 1)
        throw invalid(`${at}.source.data: the ${String(b.type)} data must be non-empty base64`);
      if ((data.length * 3) / 4 > MAX_MEDIA_BYTES)
        throw new AnthropicRequestError(`${at}.source.data: larger than ${MAX_MEDIA_BYTES / 1024 / 1024} MB`, 413);
      const url = `data:${type};base64,${data}`;
      return b.type === 'image'
        ? { type: 'image', url, media_type: type }
        : { type: 'document', url, media_type: type, ...title };
    }
    case 'url': {
      let parsed: URL | undefined;
      try {
        parsed = typeof s.url === 'string' ? new URL(s.url) : undefined;
      } catch {
        parsed = undefined;
      }
      if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
        throw invalid(`${at}.source.url: an http(s) URL expected`);
      return b.type === 'image'
        ? { type: 'image', url: parsed.href }
        : { type: 'document', url: parsed.href, ...title };
    }
    case 'text':
      if (b.type !== 'document') break;
      // A plain-text document is text to the model: sent as a text part, titled when it has a title.
      if (typeof s.data !== 'string') throw invalid(`${at}.source.data: Input should be a valid string`);
      return { type: 'text', text: typeof b.title === 'string' && b.title ? `${b.title}\n\n${s.data}` : s.data };
  }
  throw unsupported(`${at}.source.type`, `${JSON.stringify(s.type).slice(0, 40)} sources; send base64 or url`);
}

/** `tools` as a run's tool definitions: custom tools only (server tools are Anthropic's own). */
export function readTools(value: unknown): Json[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid('tools: Input should be a valid list');
  if (value.length > MAX_TOOLS) throw invalid(`tools: ${value.length} tools; at most ${MAX_TOOLS}`);
  if (value.length === 0) return undefined;
  return value.map((t, i) => {
    const at = `tools.${i}`;
    if (!isObject(t)) throw invalid(`${at}: expected {name, description, input_schema}`);
    if (t.type !== undefined && t.type !== null && t.type !== 'custom')
      throw unsupported(
        `${at}.type`,
        `Anthropic's server tool ${JSON.stringify(t.type)}; define custom tools with input_schema`,
      );
    checkKeys(t, at, ['name', 'description', 'input_schema']);
    if (typeof t.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name))
      throw invalid(`${at}.name: 1 to 128 letters, digits, _ or -`);
    if (t.description !== undefined && typeof t.description !== 'string')
      throw invalid(`${at}.description: Input should be a valid string`);
    if (!isObject(t.input_schema) || t.input_schema.type !== 'object')
      throw invalid(`${at}.input_schema: a JSON Schema of type "object"`);
    const cache = readCacheControl(t.cache_control, `${at}.cache_control`);
    return {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.input_schema,
      ...(cache ? { cache_control: cache } : {}),
    };
  });
}

/** `tool_choice`: auto, any or none; naming one tool is not something every provider does. */
export function readToolChoice(value: unknown, hasTools: boolean): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalid('tool_choice: expected {type: "auto" | "any" | "none"}');
  for (const key of Object.keys(value))
    if (key !== 'type' && key !== 'disable_parallel_tool_use' && key !== 'name')
      throw invalid(`tool_choice.${key}: Extra inputs are not permitted`);
  if (value.disable_parallel_tool_use === true)
    throw unsupported('tool_choice.disable_parallel_tool_use', 'not every provider can be kept to one call per turn');
  switch (value.type) {
    case 'auto':
    case 'none':
      return value.type;
    case 'any':
      if (!hasTools) throw invalid('tool_choice: type "any" needs tools');
      return 'any';
    case 'tool':
      throw unsupported('tool_choice.type', '"tool" (naming one); send only that tool with type "any"');
    default:
      throw invalid(`tool_choice.type: ${JSON.stringify(value.type)}; expected "auto", "any" or "none"`);
  }
}

/** `stop_sequences`: non-empty strings, a few of them. */
export function readStopSequences(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    !Array.isArray(value) ||
    value.length > MAX_STOP_SEQUENCES ||
    !value.every((s) => typeof s === 'string' && s !== '')
  )
    throw invalid(`stop_sequences: a list of at most ${MAX_STOP_SEQUENCES} non-empty strings`);
  return value.length ? (value as string[]) : undefined;
}
