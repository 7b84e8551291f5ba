/**
 * The methods a jst template may call on strings, arrays and numbers. Anything not listed here
 * is refused. Each method validates its arguments (no regular expressions, no callbacks where a
 * string is expected) and is bounded: results that could grow past the output limit are checked
 * before they are built, and work proportional to the input is charged to the step budget.
 */
import { replaceString } from './jst-replace.ts';
import {
  evaluationError, type JstRuntime, numberArg, optionalNumberArg, optionalStringArg, stringArg,
} from './jst-values.ts';

export type JstMethod<R> = (receiver: R, args: unknown[], rt: JstRuntime) => unknown;

// Charge string work by size, so a loop over a huge string is not one cheap step per call.
const chargeText = (rt: JstRuntime, length: number) => rt.charge(1 + (length >> 8));

function textResult(rt: JstRuntime, s: string): string {
  rt.checkLength(s.length);
  chargeText(rt, s.length);
  return s;
}

function sizedPad(rt: JstRuntime, args: unknown[], name: string): [number, string | undefined] {
  const length = numberArg(args, 0, name);
  if (length > rt.limits.maxOutput) throw evaluationError(`${name}(${length}) would exceed the output limit of ${rt.limits.maxOutput} characters`);
  return [length, optionalStringArg(args, 1, name)];
}

export const STRING_METHODS: ReadonlyMap<string, JstMethod<string>> = new Map<string, JstMethod<string>>([
  ['toUpperCase', (s, _a, rt) => textResult(rt, s.toUpperCase())],
  ['toLowerCase', (s, _a, rt) => textResult(rt, s.toLowerCase())],
  ['trim', (s, _a, rt) => textResult(rt, s.trim())],
  ['trimStart', (s, _a, rt) => textResult(rt, s.trimStart())],
  ['trimEnd', (s, _a, rt) => textResult(rt, s.trimEnd())],
  ['split', (s, a, rt) => {
    const parts = s.split(optionalStringArg(a, 0, 'split') as string, optionalNumberArg(a, 1, 'split'));
    chargeText(rt, s.length);
    rt.charge(parts.length);
    return parts;
  }],
  ['slice', (s, a, rt) => textResult(rt, s.slice(optionalNumberArg(a, 0, 'slice'), optionalNumberArg(a, 1, 'slice')))],
  ['substring', (s, a, rt) => textResult(rt, s.substring(numberArg(a, 0, 'substring'), optionalNumberArg(a, 1, 'substring')))],
  ['replace', (s, a, rt) => replaceString(s, stringArg(a, 0, 'replace'), stringArg(a, 1, 'replace'), false, rt)],
  ['replaceAll', (s, a, rt) => replaceString(s, stringArg(a, 0, 'replaceAll'), stringArg(a, 1, 'replaceAll'), true, rt)],
  ['includes', (s, a, rt) => (chargeText(rt, s.length), s.includes(stringArg(a, 0, 'includes'), optionalNumberArg(a, 1, 'includes')))],
  ['startsWith', (s, a) => s.startsWith(stringArg(a, 0, 'startsWith'), optionalNumberArg(a, 1, 'startsWith'))],
  ['endsWith', (s, a) => s.endsWith(stringArg(a, 0, 'endsWith'), optionalNumberArg(a, 1, 'endsWith'))],
  ['indexOf', (s, a, rt) => (chargeText(rt, s.length), s.indexOf(stringArg(a, 0, 'indexOf'), optionalNumberArg(a, 1, 'indexOf')))],
  ['padStart', (s, a, rt) => textResult(rt, s.padStart(...sizedPad(rt, a, 'padStart')))],
  ['padEnd', (s, a, rt) => textResult(rt, s.padEnd(...sizedPad(rt, a, 'padEnd')))],
  ['repeat', (s, a, rt) => {
    const count = numberArg(a, 0, 'repeat');
    // Checked before building: 'x'.repeat(1e9) is refused, never attempted.
    if (s.length * count > rt.limits.maxOutput) {
      throw evaluationError(`repeat(${count}) would exceed the output limit of ${rt.limits.maxOutput} characters`);
    }
    return textResult(rt, s.repeat(count));
  }],
  ['at', (s, a) => s.at(optionalNumberArg(a, 0, 'at') ?? 0)],
  ['charAt', (s, a) => s.charAt(optionalNumberArg(a, 0, 'charAt') ?? 0)],
  ['concat', (s, a, rt) => {
    let out = s;
    for (const v of a) {
      out += rt.text(v);
      rt.checkLength(out.length);
    }
    return textResult(rt, out);
  }],
]);

export const ARRAY_METHODS: ReadonlyMap<string, JstMethod<readonly unknown[]>> = new Map<string, JstMethod<readonly unknown[]>>([
  ['map', (arr, a, rt) => {
    const out = new Array<unknown>(arr.length);
    for (let i = 0; i < arr.length; i++) out[i] = rt.invoke(a[0], [arr[i], i, arr], 'map callback');
    return out;
  }],
  ['filter', (arr, a, rt) => arr.filter((v, i) => truthy(rt.invoke(a[0], [v, i, arr], 'filter callback')))],
  ['find', (arr, a, rt) => arr.find((v, i) => truthy(rt.invoke(a[0], [v, i, arr], 'find callback')))],
  ['findIndex', (arr, a, rt) => arr.findIndex((v, i) => truthy(rt.invoke(a[0], [v, i, arr], 'findIndex callback')))],
  ['some', (arr, a, rt) => arr.some((v, i) => truthy(rt.invoke(a[0], [v, i, arr], 'some callback')))],
  ['every', (arr, a, rt) => arr.every((v, i) => truthy(rt.invoke(a[0], [v, i, arr], 'every callback')))],
  ['reduce', (arr, a, rt) => {
    let i = 0;
    let acc: unknown;
    if (a.length >= 2) acc = a[1];
    else if (arr.length > 0) acc = arr[i++];
    else throw evaluationError('reduce of an empty array needs an initial value');
    for (; i < arr.length; i++) acc = rt.invoke(a[0], [acc, arr[i], i, arr], 'reduce callback');
    return acc;
  }],
  ['join', (arr, a, rt) => {
    const separator = optionalStringArg(a, 0, 'join') ?? ',';
    let out = '';
    for (let i = 0; i < arr.length; i++) {
      if (i > 0) out += separator;
      const v = arr[i];
      if (v !== null && v !== undefined) out += rt.text(v);
      rt.checkLength(out.length);
      rt.charge(1);
    }
    return out;
  }],
  ['slice', (arr, a, rt) => charged(rt, arr.slice(optionalNumberArg(a, 0, 'slice'), optionalNumberArg(a, 1, 'slice')))],
  ['includes', (arr, a, rt) => (rt.charge(arr.length), arr.includes(a[0], optionalNumberArg(a, 1, 'includes')))],
  ['indexOf', (arr, a, rt) => (rt.charge(arr.length), arr.indexOf(a[0], optionalNumberArg(a, 1, 'indexOf')))],
  ['flat', (arr, a, rt) => {
    const depth = optionalNumberArg(a, 0, 'flat') ?? 1;
    if (depth > 100) throw evaluationError('flat: depth must be at most 100');
    return charged(rt, arr.flat(depth));
  }],
  ['concat', (arr, a, rt) => charged(rt, arr.concat(...a))],
  ['at', (arr, a) => arr.at(optionalNumberArg(a, 0, 'at') ?? 0)],
]);

export const NUMBER_METHODS: ReadonlyMap<string, JstMethod<number>> = new Map<string, JstMethod<number>>([
  ['toFixed', (n, a) => n.toFixed(optionalNumberArg(a, 0, 'toFixed'))],
  ['toString', (n, a) => n.toString(optionalNumberArg(a, 0, 'toString'))],
]);

/** JavaScript truthiness (jst is JavaScript; handlebars has its own rules). */
export const truthy = (v: unknown): boolean => Boolean(v);

function charged<T extends readonly unknown[]>(rt: JstRuntime, result: T): T {
  rt.charge(result.length);
  return result;
}
