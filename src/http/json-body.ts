/**
 * JSON request bodies, parsed as Fastify parses them by default (`secure-json-parse`, which
 * refuses `__proto__` and `constructor.prototype` keys: prototype pollution) and bounded in
 * nesting depth, so that nothing a user stores is deeper than the databases' JSON functions can
 * walk (SQLite stops at 1,000 levels) or than our own recursive code should follow.
 */
import sjson from 'secure-json-parse';
import { BadRequest } from '../util/errors.ts';

/** Deepest nesting of objects and arrays a JSON body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/** Parses a JSON body; an empty one is `{}` (the official client posts `/token/issue` so). */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = sjson.parse(text, undefined, PARSE_OPTIONS);
  } catch (err) {
    const message = (err as Error).message;
    if (/prototype property/i.test(message)) {
      throw new BadRequest(
        'JSON body: the keys "__proto__" and "constructor.prototype" are not allowed (they would change object prototypes)',
      );
    }
    throw new BadRequest(`malformed JSON body: ${message}`);
  }
  const deep = tooDeep(value, MAX_JSON_DEPTH);
  if (deep)
    throw new BadRequest(`JSON body: nesting deeper than ${MAX_JSON_DEPTH} levels at ${deep}; flatten the value`);
  // \u0000 and a lone surrogate (\ud800) are valid JSON but no database text holds them
  // (PostgreSQL refuses both in text and jsonb): refused here, for every route at once.
  // Most bodies hold no \u escape at all: one fast substring search spares them both regex scans
  // (a multi-megabyte body is parsed on the event loop, so every pass over it counts).
  const escapes = text.includes('\\u');
  const nul = escapes && NUL_ESCAPE.test(text) ? whereString(value, (s) => s.includes('\0')) : undefined;
  if (nul !== undefined) throw new BadRequest(`JSON body: ${nul} may not contain the NUL character (\\u0000)`);
  const lone = escapes && SURROGATE_ESCAPE.test(text) ? whereString(value, (s) => LONE_SURROGATE.test(s)) : undefined;
  if (lone !== undefined) {
    throw new BadRequest(
      `JSON body: ${lone} must be well-formed Unicode; a lone surrogate escape (\\ud800 to \\udfff without its pair) is not`,
    );
  }
  return value;
}

/** NUL and lone surrogates can only appear in JSON text as escapes; cheap tests before the walk. */
const NUL_ESCAPE = /\\u0000/i;
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Where the first string or key that is `bad` stands ("config.x", "a key of tags[2]"), or undefined. */
function whereString(value: unknown, bad: (s: string) => boolean): string | undefined {
  const stack: Array<{ v: unknown; path: string }> = [{ v: value, path: '' }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (bad(v)) return path || 'the body';
    } else if (Array.isArray(v)) v.forEach((item, i) => stack.push({ v: item, path: `${path}[${i}]` }));
    else if (v !== null && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        if (bad(k)) return `a key of ${path || 'the body'}`;
        stack.push({ v: (v as Record<string, unknown>)[k], path: path ? `${path}.${k}` : k });
      }
    }
  }
  return undefined;
}

/**
 * The path where `value` nests deeper than `max` levels, or undefined. Iterative, so that a
 * hostile body cannot exhaust the stack before it is refused.
 */
export function tooDeep(value: unknown, max: number): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const stack: Array<{ v: object; depth: number; path: string }> = [{ v: value, depth: 1, path: '' }];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (depth > max) return path || '(the body)';
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const c = v[i];
        if (c !== null && typeof c === 'object') stack.push({ v: c, depth: depth + 1, path: `${path}[${i}]` });
      }
    } else {
      for (const k of Object.keys(v)) {
        const c = (v as Record<string, unknown>)[k];
        if (c !== null && typeof c === 'object')
          stack.push({ v: c, depth: depth + 1, path: path ? `${path}.${k}` : k });
      }
    }
  }
  return undefined;
}
