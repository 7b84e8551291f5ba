/**
 * Property access on plain data for jst: own data properties of objects and arrays, `length` and
 * characters of strings. Prototype names and inherited members are refused; getters never run.
 */
import { ARRAY_METHODS, STRING_METHODS } from './jst-methods.ts';
import { evaluationError, isCallable, kindOf } from './jst-values.ts';

/** Names that lead to prototypes and constructors: refused wherever they appear. */
export const FORBIDDEN_NAMES: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

export const NOT_FOUND = Symbol('not-found');

export const forbidden = (name: string) => evaluationError(`property "${name}" is not accessible in templates`);

/** An own data property, or NOT_FOUND. Getters are never run. */
export function readOwn(target: object, key: string): unknown {
  const d = Object.getOwnPropertyDescriptor(target, key);
  if (!d) return NOT_FOUND;
  if (!('value' in d)) throw evaluationError(`property "${key}" is not a plain data property`);
  return d.value;
}

/** `target[key]` for plain data: own properties of objects and arrays, length and characters of strings. */
export function readProperty(target: unknown, key: string): unknown {
  if (FORBIDDEN_NAMES.has(key)) throw forbidden(key);
  if (typeof target === 'string') {
    if (key === 'length') return target.length;
    if (/^(0|[1-9]\d*)$/.test(key)) return target[Number(key)];
    throw evaluationError(`strings have no property "${key}"${STRING_METHODS.has(key) ? ` (call it: .${key}(…))` : ''}`);
  }
  if (typeof target !== 'object' || target === null) throw evaluationError(`${kindOf(target)} has no property "${key}"`);
  if (isCallable(target)) throw evaluationError(`functions have no readable properties ("${key}")`);
  const v = readOwn(target, key);
  if (v !== NOT_FOUND) return v;
  // Absent from the data: undefined, as in JavaScript. Inherited (toString, map …): refused.
  if (key in target) {
    const hint = Array.isArray(target) && ARRAY_METHODS.has(key) ? ` (call it: .${key}(…))` : '';
    throw evaluationError(`property "${key}" is not an own data property${hint}`);
  }
  return undefined;
}
