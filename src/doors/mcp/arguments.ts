/**
 * Reading a built-in tool's arguments: each one checked against its bound before any work, and
 * every argument the tool does not know refused by name. A refusal is a ToolInputError, which
 * the door answers as a tool result with `isError` (the model reads it and can correct itself).
 */

type Json = Record<string, unknown>;

/** Arguments a tool refuses: the message says what to fix. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

/** The arguments object, with no key outside `known`. */
export function argumentsOf(tool: string, args: unknown, known: readonly string[]): Json {
  if (args === undefined || args === null) return {};
  if (typeof args !== 'object' || Array.isArray(args)) throw new ToolInputError(`${tool}: arguments must be an object`);
  const unknown = Object.keys(args).filter((k) => !known.includes(k));
  if (unknown.length)
    throw new ToolInputError(
      `${tool}: unknown argument${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k.slice(0, 64))).join(', ')}; it takes ${known.join(', ')}`,
    );
  return args as Json;
}

/** An optional string of 1 to `max` characters (blank counts as absent when `blankIsAbsent`). */
export function optionalString(args: Json, key: string, max: number): string | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ToolInputError(`${key} must be a string`);
  if (v.trim() === '') throw new ToolInputError(`${key} must not be empty`);
  if (v.length > max) throw new ToolInputError(`${key} has ${v.length} characters; at most ${max}`);
  return v;
}

export function requiredString(args: Json, key: string, max: number): string {
  const v = optionalString(args, key, max);
  if (v === undefined) throw new ToolInputError(`${key} is required`);
  return v;
}

/** An optional whole number from `min` to `max`, else `fallback`. */
export function integerIn(args: Json, key: string, min: number, max: number, fallback: number): number {
  const v = args[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new ToolInputError(`${key} must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return v;
}

/** An optional list of at most `maxItems` strings of 1 to `maxLength` characters. */
export function stringList(args: Json, key: string, maxItems: number, maxLength: number): string[] | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new ToolInputError(`${key} must be an array of strings`);
  if (v.length > maxItems) throw new ToolInputError(`${key} has ${v.length} items; at most ${maxItems}`);
  return v.map((item, i) => {
    if (typeof item !== 'string' || item === '' || item.length > maxLength)
      throw new ToolInputError(`${key}[${i}] must be a string of 1 to ${maxLength} characters`);
    return item;
  });
}

/** An optional value among `allowed`. */
export function oneOf<T extends string>(args: Json, key: string, allowed: readonly T[]): T | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
    throw new ToolInputError(`${key} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  return v as T;
}
