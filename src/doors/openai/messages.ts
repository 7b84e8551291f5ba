/**
 * Chat Completions requests in Orrery's terms: `messages` as the parts model of
 * providers/driver.ts (text, images, tool calls and their results), `tools` and `tool_choice` as
 * a run's tool definitions, `response_format` as its result schema, the sampling parameters as its
 * config. Every refusal names the parameter at fault, as OpenAI does.
 */
import { toolInputOf, type ChatMessage, type ContentPart, type ToolChoice } from '../../providers/driver.ts';
import { OpenAIRequestError, unsupported } from './errors.ts';

type Json = Record<string, unknown>;

/** Bounds on a request (besides the body's 16 MiB): OpenAI's own where it has one. */
const MAX_MESSAGES = 2048;
const MAX_STOP = 4;
const MAX_TOOLS = 128;
/** A data URL of an image, decoded, at most this many bytes (OpenAI takes images up to 20 MB). */
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const invalid = (param: string, message: string) => new OpenAIRequestError(message, param, 'invalid_value');

/** The messages of a request, checked: a `tool` message answers a call an earlier assistant message made. */
export function readMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0)
    throw invalid('messages', "Invalid 'messages': expected a non-empty array of messages.");
  if (value.length > MAX_MESSAGES)
    throw invalid('messages', `Invalid 'messages': ${value.length} messages; at most ${MAX_MESSAGES}.`);
  const out: ChatMessage[] = [];
  const calls = new Set<string>();
  for (const [i, m] of value.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw invalid(at, `Invalid '${at}': expected an object {role, content}.`);
    switch (m.role) {
      case 'system':
      case 'developer':
        out.push({ role: 'system', content: textContent(m.content, `${at}.content`) });
        break;
      case 'user':
        out.push({ role: 'user', content: userContent(m.content, `${at}.content`) });
        break;
      case 'assistant':
        out.push(assistantMessage(m, at, calls));
        break;
      case 'tool': {
        const id = m.tool_call_id;
        if (typeof id !== 'string' || !id)
          throw invalid(`${at}.tool_call_id`, `Missing required parameter: '${at}.tool_call_id'.`);
        if (!calls.has(id))
          throw invalid(
            `${at}.tool_call_id`,
            `Invalid '${at}.tool_call_id': "${id}" answers no tool call of an earlier assistant message; messages with role 'tool' must be a response to a preceding message with 'tool_calls'.`,
          );
        const part: ContentPart = {
          type: 'tool_result',
          tool_use_id: id,
          content: textContent(m.content, `${at}.content`),
        };
        // Results of one assistant turn's calls are one turn: consecutive tool messages are merged.
        const last = out[out.length - 1];
        if (last?.role === 'tool' && Array.isArray(last.content)) last.content.push(part);
        else out.push({ role: 'tool', content: [part] });
        break;
      }
      case 'function':
        throw unsupported(`${at}.role`, "the deprecated 'function' role; use 'tool' messages with tool_call_id");
      default:
        throw invalid(
          `${at}.role`,
          `Invalid value for '${at}.role': ${JSON.stringify(m.role)}; supported values are 'system', 'developer', 'user', 'assistant' and 'tool'.`,
        );
    }
  }
  return out;
}

/** A string, or text parts joined (system, developer and tool messages take text only). */
function textContent(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(at, `Invalid '${at}': expected a string or an array of text parts.`);
  return content
    .map((p, j) => {
      if (!isObject(p) || p.type !== 'text' || typeof p.text !== 'string')
        throw invalid(`${at}[${j}]`, `Invalid '${at}[${j}]': this message takes text parts {type: 'text', text} only.`);
      return p.text;
    })
    .join('\n');
}

function userContent(content: unknown, at: string): string | ContentPart[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length === 0)
    throw invalid(at, `Invalid '${at}': expected a string or a non-empty array of content parts.`);
  return content.map((p, j): ContentPart => {
    const where = `${at}[${j}]`;
    if (!isObject(p)) throw invalid(where, `Invalid '${where}': expected a content part object.`);
    if (p.type === 'text') {
      if (typeof p.text !== 'string') throw invalid(`${where}.text`, `Invalid '${where}.text': expected a string.`);
      return { type: 'text', text: p.text };
    }
    if (p.type === 'image_url') return imagePart(p.image_url, `${where}.image_url`);
    if (p.type === 'input_audio' || p.type === 'file')
      throw unsupported(`${where}.type`, `'${p.type}' parts; send text and image_url parts`);
    throw invalid(
      `${where}.type`,
      `Invalid value for '${where}.type': ${JSON.stringify(p.type)}; supported values are 'text' and 'image_url'.`,
    );
  });
}

/** An image by https URL or data URL; a data URL must be a readable base64 image. */
function imagePart(value: unknown, at: string): ContentPart {
  const url = isObject(value) ? value.url : undefined;
  if (typeof url !== 'string' || !url) throw invalid(`${at}.url`, `Missing required parameter: '${at}.url'.`);
  if (url.startsWith('data:')) {
    const m = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i.exec(url);
    if (!m || m[2].length === 0 || m[2].length % 4 === 1)
      throw new OpenAIRequestError(
        `Invalid image in '${at}.url': a data URL must be data:image/<type>;base64,<base64 data>.`,
        `${at}.url`,
        'invalid_image_url',
      );
    if ((m[2].length * 3) / 4 > MAX_IMAGE_BYTES)
      throw new OpenAIRequestError(
        `Invalid image in '${at}.url': larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MB.`,
        `${at}.url`,
        'image_too_large',
      );
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
      `Invalid image in '${at}.url': expected an http(s) URL or a data URL.`,
      `${at}.url`,
      'invalid_image_url',
    );
  return { type: 'image', url };
}

function assistantMessage(m: Json, at: string, calls: Set<string>): ChatMessage {
  const text =
    m.content === null || m.content === undefined
      ? ''
      : typeof m.content === 'string'
        ? m.content
        : assistantText(m.content, `${at}.content`);
  if (m.tool_calls === undefined || m.tool_calls === null) return { role: 'assistant', content: text };
  if (!Array.isArray(m.tool_calls))
    throw invalid(`${at}.tool_calls`, `Invalid '${at}.tool_calls': expected an array of tool calls.`);
  const parts: ContentPart[] = text ? [{ type: 'text', text }] : [];
  for (const [j, c] of m.tool_calls.entries()) {
    const where = `${at}.tool_calls[${j}]`;
    if (!isObject(c) || !isObject(c.function) || typeof c.id !== 'string' || !c.id)
      throw invalid(where, `Invalid '${where}': expected {id, type: 'function', function: {name, arguments}}.`);
    if (c.type !== undefined && c.type !== 'function')
      throw unsupported(`${where}.type`, `tool calls of type ${JSON.stringify(c.type)}; only 'function'`);
    const name = c.function.name;
    if (typeof name !== 'string' || !name)
      throw invalid(`${where}.function.name`, `Missing required parameter: '${where}.function.name'.`);
    const args = c.function.arguments;
    if (args !== undefined && typeof args !== 'string')
      throw invalid(`${where}.function.arguments`, `Invalid '${where}.function.arguments': expected a JSON string.`);
    calls.add(c.id);
    parts.push({ type: 'tool_use', id: c.id, tool_name: name, ...toolInputOf(args) });
  }
  return { role: 'assistant', content: parts };
}

/** An assistant's content parts: text (and refusals, kept as text). */
function assistantText(content: unknown, at: string): string {
  if (!Array.isArray(content)) throw invalid(at, `Invalid '${at}': expected a string, null or an array of text parts.`);
  return content
    .map((p, j) => {
      if (isObject(p) && p.type === 'text' && typeof p.text === 'string') return p.text;
      if (isObject(p) && p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      throw invalid(`${at}[${j}]`, `Invalid '${at}[${j}]': an assistant message takes text and refusal parts.`);
    })
    .join('');
}

/** `tools` as a run's tool definitions (the run path checks names and schemas again). */
export function readTools(value: unknown): Json[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid('tools', "Invalid 'tools': expected an array of function tools.");
  if (value.length > MAX_TOOLS) throw invalid('tools', `Invalid 'tools': ${value.length} tools; at most ${MAX_TOOLS}.`);
  return value.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) throw invalid(at, `Invalid '${at}': expected {type: 'function', function: {...}}.`);
    if (t.type !== 'function')
      throw unsupported(`${at}.type`, `tools of type ${JSON.stringify(t.type)}; only 'function'`);
    const f = t.function;
    if (!isObject(f) || typeof f.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(f.name))
      throw invalid(`${at}.function.name`, `Invalid '${at}.function.name': 1 to 64 letters, digits, _ or -.`);
    const parameters = f.parameters ?? { type: 'object', properties: {} };
    if (!isObject(parameters) || parameters.type !== 'object')
      throw invalid(
        `${at}.function.parameters`,
        `Invalid '${at}.function.parameters': a JSON Schema of type "object".`,
      );
    if (f.description !== undefined && typeof f.description !== 'string')
      throw invalid(`${at}.function.description`, `Invalid '${at}.function.description': expected a string.`);
    return {
      name: f.name,
      ...(f.description !== undefined ? { description: f.description } : {}),
      input_schema: parameters,
    };
  });
}

/** `tool_choice`: none, auto, required; naming one function is not something every provider does. */
export function readToolChoice(value: unknown, hasTools: boolean): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'none' || value === 'auto' || value === 'required') {
    if (value === 'required' && !hasTools)
      throw invalid('tool_choice', "Invalid value for 'tool_choice': 'required' needs 'tools'.");
    return value;
  }
  if (isObject(value))
    throw unsupported('tool_choice', "naming a function; use 'required' with only that tool in 'tools'");
  throw invalid('tool_choice', "Invalid value for 'tool_choice': expected 'none', 'auto' or 'required'.");
}

/** `response_format` as a run's result schema (json_object: any object; json_schema: its schema). */
export function readResponseFormat(value: unknown): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalid('response_format', "Invalid 'response_format': expected an object {type}.");
  switch (value.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'object' };
    case 'json_schema': {
      const spec = value.json_schema;
      if (!isObject(spec) || typeof spec.name !== 'string')
        throw invalid('response_format.json_schema', "Missing required parameter: 'response_format.json_schema.name'.");
      const schema = spec.schema ?? { type: 'object' };
      if (!isObject(schema))
        throw invalid(
          'response_format.json_schema.schema',
          "Invalid 'response_format.json_schema.schema': a JSON Schema object.",
        );
      return schema;
    }
    default:
      throw invalid(
        'response_format.type',
        `Invalid value for 'response_format.type': ${JSON.stringify(value.type)}; supported values are 'text', 'json_object' and 'json_schema'.`,
      );
  }
}

/** `stop`: a string or up to 4 strings. */
export function readStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const stop = Array.isArray(value) ? value : [value];
  if (stop.length > MAX_STOP || !stop.every((s) => typeof s === 'string' && s !== ''))
    throw invalid('stop', `Invalid 'stop': a string or an array of at most ${MAX_STOP} non-empty strings.`);
  return stop.length ? (stop as string[]) : undefined;
}
