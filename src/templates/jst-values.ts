/**
 * The values and the runtime contract shared by the jst evaluator, its allow-listed methods and
 * its globals. Functions in a template are never real JavaScript functions: an arrow function is
 * a JstClosure (an AST plus its scope) and a built-in is a JstNative, so nothing a template holds
 * can reach the host's Function machinery.
 */
import type { JstNode } from './jst-parser.ts';
import type { RenderLimits } from './render-limits.ts';
import { TemplateError } from './template-error.ts';

/** A lexical scope made by calling an arrow function: its parameter names and the arguments. */
export interface JstScope {
  readonly names: readonly string[];
  readonly values: readonly unknown[];
  readonly parent: JstScope | null;
}

export class JstClosure {
  constructor(readonly params: readonly string[], readonly body: JstNode, readonly scope: JstScope | null) {}
  /** Functions vanish from JSON, as they do in JavaScript. */
  toJSON(): undefined {
    return undefined;
  }
}

export class JstNative {
  constructor(readonly name: string, readonly impl: (args: unknown[], rt: JstRuntime) => unknown) {}
  toJSON(): undefined {
    return undefined;
  }
}

export const isCallable = (v: unknown): v is JstClosure | JstNative => v instanceof JstClosure || v instanceof JstNative;

/** What methods and globals may ask of the evaluator running them. */
export interface JstRuntime {
  readonly limits: RenderLimits;
  /** Counts work; throws once the step budget is spent. */
  charge(steps: number): void;
  /** Throws if a string of this length would exceed the output limit. */
  checkLength(length: number): void;
  /** Renders a value as prompt text (see value-text.ts), within the limits. */
  text(value: unknown): string;
  /** Throws if rendering this value as JSON would exceed the output limit. */
  measure(value: unknown): void;
  /** Calls a template function (closure or built-in) with arguments. */
  invoke(fn: unknown, args: unknown[], what: string): unknown;
}

export const evaluationError = (message: string): TemplateError => new TemplateError(message, 'evaluation');

/** A name for a value's type in messages: "a string", "an array", "null" … */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (isCallable(v)) return 'a function';
  const t = typeof v;
  return t === 'object' ? 'an object' : `a ${t}`;
}

export function stringArg(args: readonly unknown[], i: number, method: string): string {
  const v = args[i];
  if (typeof v !== 'string') throw evaluationError(`${method}: argument ${i + 1} must be a string, not ${kindOf(v)}`);
  return v;
}

export function optionalStringArg(args: readonly unknown[], i: number, method: string): string | undefined {
  return args[i] === undefined ? undefined : stringArg(args, i, method);
}

export function numberArg(args: readonly unknown[], i: number, method: string): number {
  const v = args[i];
  if (typeof v !== 'number') throw evaluationError(`${method}: argument ${i + 1} must be a number, not ${kindOf(v)}`);
  return v;
}

export function optionalNumberArg(args: readonly unknown[], i: number, method: string): number | undefined {
  return args[i] === undefined ? undefined : numberArg(args, i, method);
}

/** Primitives only: refuses objects and functions where JavaScript would coerce them implicitly. */
export function primitiveArg(v: unknown, what: string): unknown {
  if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
    throw evaluationError(`${what} needs a string, number or boolean, not ${kindOf(v)}`);
  }
  return v;
}
