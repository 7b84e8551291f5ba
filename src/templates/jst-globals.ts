/**
 * The only globals a jst template can name besides its data's top-level keys. Namespaces are
 * frozen null-prototype objects holding JstNative functions, so `Math.constructor` or
 * `JSON.__proto__` lead nowhere.
 */
import {
  evaluationError, isCallable, JstNative, type JstRuntime, kindOf, numberArg, primitiveArg,
} from './jst-values.ts';

/** Namespace objects and their names, for messages that list what a namespace allows. */
export const NAMESPACE_NAMES = new WeakMap<object, string>();

function namespace(name: string, entries: Record<string, JstNative>): object {
  const ns = Object.freeze(Object.assign(Object.create(null) as object, entries));
  NAMESPACE_NAMES.set(ns, name);
  return ns;
}

const fn = (name: string, impl: (args: unknown[], rt: JstRuntime) => unknown) => new JstNative(name, impl);

const mathFn = (name: string, op: (...xs: number[]) => number) =>
  fn(`Math.${name}`, (args) => op(...args.map((v, i) => numberArg(args, i, `Math.${name}`))));

function plainObject(v: unknown, method: string): object {
  if (v === null || typeof v !== 'object' || isCallable(v)) throw evaluationError(`${method} needs an object or array, not ${kindOf(v)}`);
  return v;
}

function listed<T>(rt: JstRuntime, list: T[]): T[] {
  rt.charge(list.length);
  return list;
}

export const JST_GLOBALS: ReadonlyMap<string, unknown> = new Map<string, unknown>([
  ['undefined', undefined],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['JSON', namespace('JSON', {
    stringify: fn('JSON.stringify', (args, rt) => {
      const [value, replacer, indent] = args;
      if (replacer !== undefined && replacer !== null) throw evaluationError('JSON.stringify: a replacer is not supported; pass null');
      if (indent !== undefined && typeof indent !== 'number' && typeof indent !== 'string') {
        throw evaluationError('JSON.stringify: the indent must be a number or a string');
      }
      rt.measure(value);
      const out = JSON.stringify(value, null, indent as number | string | undefined);
      if (out !== undefined) rt.checkLength(out.length);
      return out;
    }),
  })],
  ['Math', namespace('Math', {
    round: mathFn('round', Math.round),
    floor: mathFn('floor', Math.floor),
    ceil: mathFn('ceil', Math.ceil),
    abs: mathFn('abs', Math.abs),
    min: mathFn('min', Math.min),
    max: mathFn('max', Math.max),
  })],
  ['String', fn('String', (args, rt) => (args.length === 0 ? '' : rt.text(args[0])))],
  ['Number', fn('Number', (args) => (args.length === 0 ? 0 : Number(primitiveArg(args[0], 'Number()'))))],
  ['Boolean', fn('Boolean', (args) => Boolean(args[0]))],
  ['Array', namespace('Array', { isArray: fn('Array.isArray', (args) => Array.isArray(args[0])) })],
  ['Object', namespace('Object', {
    keys: fn('Object.keys', (args, rt) => listed(rt, Object.keys(plainObject(args[0], 'Object.keys')))),
    values: fn('Object.values', (args, rt) => listed(rt, Object.values(plainObject(args[0], 'Object.values')))),
    entries: fn('Object.entries', (args, rt) => listed(rt, Object.entries(plainObject(args[0], 'Object.entries')))),
  })],
]);
