/**
 * How a data value becomes prompt text, for both jst and handlebars.
 *
 * Primitives and arrays of primitives render as JavaScript does (`String(v)`, so `['a','b']` is
 * `a,b`). Objects, and arrays holding any object, render as pretty JSON instead of JavaScript's
 * `[object Object]`: a prompt author interpolating a record wants its content in the prompt, and
 * `[object Object]` is never what anyone meant.
 */
export function valueToText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Array.isArray(value) && !value.some(holdsObject)) return joinPrimitives(value);
  return JSON.stringify(value, null, 2) ?? '';
}

const holdsObject = (v: unknown): boolean =>
  v !== null && typeof v === 'object' && (!Array.isArray(v) || v.some(holdsObject));

// Like Array.prototype.join(','): null and undefined become empty, nested arrays flatten.
function joinPrimitives(values: readonly unknown[]): string {
  let out = '';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) continue;
    out += Array.isArray(v) ? joinPrimitives(v) : String(v);
  }
  return out;
}
