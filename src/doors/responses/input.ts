/**
 * Responses API requests in Orrery's terms: `input` (a string or items: messages, function calls
 * and their outputs) as the parts model of providers/driver.ts, `tools` and `tool_choice` as a
 * run's tool definitions, `text.format` as its result schema. Every refusal names the parameter
 * at fault, as OpenAI does (`input[2].content[0].image_url`).
 */
import { toolInputOf, type ChatMessage, type ContentPart, type ToolChoice } from '../../providers/driver.ts';
import { OpenAIRequestError, unsupported } from '../openai/errors.ts';

type Json = Record<string, unknown>;

/** Bounds on a request (besides the body's 16 MiB). */
const MAX_ITEMS = 2048;
const MAX_TOOLS = 128;
/** A data URL of an image, decoded, at most this many bytes. */
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const invalid = (param: string, message: string) => new OpenAIRequestError(message, param, 'invalid_value');

/** Item keys that carry nothing to apply (ids and statuses the SDK echoes back). */
const ECHOED = new Set(['id', 'status', 'type']);

function checkKeys(item: Json, at: string, allowed: readonly string[]): void {
  for (const key of Object.keys(item))
    if (!ECHOED.has(key) && !allowed.includes(key))
      throw new OpenAIRequestError(`Unknown parameter: '${at}.${key}'.`, `${at}.${key}`, 'unknown_parameter');
}

/**
 * The input's messages. `known` holds the calls of the history it continues, so that a
 * `function_call_output` answers a call made there or earlier in this input.
 */
export function readInput(value: unknown, known: Set<string>): ChatMessage[] {
  if (typeof value === 'string') return [{ role: 'user', content: value }];
  if (!Array.isArray(value) || value.length === 0)
    throw invalid('input', "Invalid 'input': expected a string or a non-empty array of input items.");
  if (value.length > MAX_ITEMS) throw invalid('input', `Invalid 'input': ${value.length} items; at most ${MAX_ITEMS}.`);
  const out: ChatMessage[] = [];
  for (const [i, item] of value.entries()) {
    const at = `input[${i}]`;
    if (!isObject(item)) throw invalid(at, `Invalid '${at}': expected an input item object.`);
    const type = item.type ?? 'message';
    if (type === 'message') out.push(message(item, at));
    else if (type === 'function_call') {
      checkKeys(item, at, ['call_id', 'name', 'arguments']);
      if (typeof item.call_id !== 'string' || !item.call_id)
        throw invalid(`${at}.call_id`, `Missing required parameter: '${at}.call_id'.`);
      if (typeof item.name !== 'string' || !item.name)
        throw invalid(`${at}.name`, `Missing required parameter: '${at}.name'.`);
      if (typeof item.arguments !== 'string')
        throw invalid(`${at}.arguments`, `Invalid '${at}.arguments': expected a JSON string.`);
      known.add(item.call_id);
      const part: ContentPart = {
        type: 'tool_use',
        id: item.call_id,
        tool_name: item.name,
        ...toolInputOf(item.arguments),
      };
      // Calls of one turn are one assistant message.
      const last = out[out.length - 1];
      if (last?.role === 'assistant' && Array.isArray(last.content)) last.content.push(part);
      else if (last?.role === 'assistant' && typeof last.content === 'string')
        out[out.length - 1] = {
          role: 'assistant',
          content: [...(last.content ? [{ type: 'text' as const, text: last.content }] : []), part],
        };
      else out.push({ role: 'assistant', content: [part] });
    } else if (type === 'function_call_output') {
      checkKeys(item, at, ['call_id', 'output']);
      const id = item.call_id;
      if (typeof id !== 'string' || !id) throw invalid(`${at}.call_id`, `Missing required parameter: '${at}.call_id'.`);
      if (!known.has(id))
        throw invalid(
          `${at}.call_id`,
          `No tool call found for function call output with call_id ${id}: it answers no function_call of this input or of the response it continues.`,
        );
      if (typeof item.output !== 'string') throw invalid(`${at}.output`, `Invalid '${at}.output': expected a string.`);
      const part: ContentPart = { type: 'tool_result', tool_use_id: id, content: item.output };
      const last = out[out.length - 1];
      if (last?.role === 'tool' && Array.isArray(last.content)) last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    } else
      throw unsupported(
        `${at}.type`,
        `${JSON.stringify(type).slice(0, 40)} items; the door takes message, function_call and function_call_output items`,
      );
  }
  return out;
}

function message(item: Json, at: string): ChatMessage {
  checkKeys(item, at, ['role', 'content']);
  const role = item.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
    throw invalid(
      `${at}.role`,
      `Invalid value for '${at}.role': supported values are 'user', 'assistant', 'system' and 'developer'.`,
    );
  const content = item.content;
  if (typeof content === 'string') return { role: role === 'developer' ? 'system' : role, content };
  if (!Array.isArray(content) || content.length === 0)
    throw invalid(`${at}.content`, `Invalid '${at}.content': expected a string or a non-empty array of content parts.`);
  const parts = content.map((p, j) => contentPart(p, `${at}.content[${j}]`, role));
  if (role === 'user') return { role, content: parts };
  // System, developer and assistant messages take text: joined.
  const text = parts.map((p) => (p.type === 'text' ? p.text : '')).join(role === 'assistant' ? '' : '\n');
  return { role: role === 'developer' ? 'system' : role, content: text };
}

function contentPart(p: unknown, at: string, role: string): ContentPart {
  if (!isObject(p)) throw invalid(at, `Invalid '${at}': expected a content part object.`);
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      checkKeys(p, at, ['text', 'annotations', 'logprobs']);
      if (typeof p.text !== 'string') throw invalid(`${at}.text`, `Invalid '${at}.text': expected a string.`);
      return { type: 'text', text: p.text };
    case 'refusal':
      checkKeys(p, at, ['refusal']);
      if (typeof p.refusal !== 'string') throw invalid(`${at}.refusal`, `Invalid '${at}.refusal': expected a string.`);
      return { type: 'text', text: p.refusal };
    case 'input_image': {
      if (role !== 'user') throw invalid(`${at}.type`, `Invalid '${at}.type': images go in user messages.`);
      checkKeys(p, at, ['image_url', 'detail', 'file_id']);
      if (p.file_id !== undefined && p.file_id !== null)
        throw unsupported(`${at}.file_id`, 'OpenAI file ids; send image_url (an https or data URL)');
      return image(p.image_url, `${at}.image_url`);
    }
    case 'input_file':
    case 'input_audio':
      throw unsupported(`${at}.type`, `'${p.type}' parts; send input_text and input_image parts`);
    default:
      throw invalid(
        `${at}.type`,
        `Invalid value for '${at}.type': supported values are 'input_text', 'input_image', 'output_text' and 'refusal'.`,
      );
  }
}

function image(url: unknown, at: string): ContentPart {
  if (typeof url !== 'string' || !url) throw invalid(at, `Missing required parameter: '${at}'.`);
  if (url.startsWith('data:')) {
    const m = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i.exec(url);
    if (!m || m[2].length === 0 || m[2].length % 4 === 1)
      throw new OpenAIRequestError(
        `Invalid image in '${at}': a data URL must be data:image/<type>;base64,<base64 data>.`,
        at,
        'invalid_image_url',
      );
    if ((m[2].length * 3) / 4 > MAX_IMAGE_BYTES)
      throw new OpenAIRequestError(`Invalid image in '${at}': larger than 20 MB.`, at, 'image_too_large');
    return { type: 'image', url, media_type: m[1].toLowerCase() };
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
    throw new OpenAIRequestError(
      `Invalid image in '${at}': expected an http(s) URL or a data URL.`,
      at,
      'invalid_image_url',
    );
  return { type: 'image', url: parsed.href };
}

/** `tools`: function tools (flat, as the Responses API has them); OpenAI's hosted tools are refused by name. */
export function readTools(value: unknown): Json[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid('tools', "Invalid 'tools': expected an array of function tools.");
  if (value.length > MAX_TOOLS) throw invalid('tools', `Invalid 'tools': ${value.length} tools; at most ${MAX_TOOLS}.`);
  if (value.length === 0) return undefined;
  return value.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) throw invalid(at, `Invalid '${at}': expected {type: 'function', name, parameters}.`);
    if (t.type !== 'function')
      throw unsupported(
        `${at}.type`,
        `OpenAI's hosted tool ${JSON.stringify(t.type).slice(0, 40)}; define function tools`,
      );
    for (const key of Object.keys(t))
      if (!['type', 'name', 'description', 'parameters', 'strict'].includes(key))
        throw new OpenAIRequestError(`Unknown parameter: '${at}.${key}'.`, `${at}.${key}`, 'unknown_parameter');
    if (typeof t.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.name))
      throw invalid(`${at}.name`, `Invalid '${at}.name': 1 to 64 letters, digits, _ or -.`);
    if (t.description !== undefined && t.description !== null && typeof t.description !== 'string')
      throw invalid(`${at}.description`, `Invalid '${at}.description': expected a string.`);
    const parameters = t.parameters ?? { type: 'object', properties: {} };
    if (!isObject(parameters) || parameters.type !== 'object')
      throw invalid(`${at}.parameters`, `Invalid '${at}.parameters': a JSON Schema of type "object".`);
    return {
      name: t.name,
      ...(typeof t.description === 'string' ? { description: t.description } : {}),
      input_schema: parameters,
    };
  });
}

export function readToolChoice(value: unknown, hasTools: boolean): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'none' || value === 'auto' || value === 'required') {
    if (value === 'required' && !hasTools)
      throw invalid('tool_choice', "Invalid value for 'tool_choice': 'required' needs 'tools'.");
    return value;
  }
  if (isObject(value)) throw unsupported('tool_choice', "naming a tool; use 'required' with only that tool in 'tools'");
  throw invalid('tool_choice', "Invalid value for 'tool_choice': expected 'none', 'auto' or 'required'.");
}

/** `text.format` as a run's result schema (json_object: any object; json_schema: its schema). */
export function readTextFormat(value: unknown): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalid('text', "Invalid 'text': expected an object {format}.");
  for (const key of Object.keys(value)) {
    if (key === 'format') continue;
    if (key === 'verbosity' && (value.verbosity === null || value.verbosity === undefined)) continue;
    throw unsupported(`text.${key}`, 'the door applies text.format only');
  }
  const f = value.format;
  if (f === undefined || f === null) return undefined;
  if (!isObject(f)) throw invalid('text.format', "Invalid 'text.format': expected an object {type}.");
  switch (f.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'object' };
    case 'json_schema':
      if (typeof f.name !== 'string' || !f.name)
        throw invalid('text.format.name', "Missing required parameter: 'text.format.name'.");
      if (!isObject(f.schema)) throw invalid('text.format.schema', "Missing required parameter: 'text.format.schema'.");
      return f.schema;
    default:
      throw invalid(
        'text.format.type',
        "Invalid value for 'text.format.type': supported values are 'text', 'json_object' and 'json_schema'.",
      );
  }
}
