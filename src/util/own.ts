/**
 * Caller strings used as keys (field paths, sort keys, facet names, layout fields, roles…) must
 * only ever find what was put there. A plain object literal answers `constructor`, `toString` or
 * `__proto__` from Object.prototype, and writing `obj['__proto__'] = v` replaces a prototype. These
 * helpers are the one way user-named keys are read and written (issue 14, prototype pollution).
 */

/** A lookup table with no prototype: `table[name]` is undefined for every name not listed. */
export function table<T>(entries: Record<string, T>): Readonly<Record<string, T>> {
  return Object.freeze(Object.assign(Object.create(null) as Record<string, T>, entries));
}

/** True when `key` is an own property of `obj` (an object or array). */
export function hasOwnKey(obj: unknown, key: string): boolean {
  return obj !== null && typeof obj === 'object' && Object.hasOwn(obj, key);
}

/** `obj[key] = value` as a plain data property, even for `__proto__` (never a prototype change). */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A path segment that names a prototype rather than data: refused in every path language. */
export const isPrototypeKey = (key: string): boolean => key === '__proto__';
