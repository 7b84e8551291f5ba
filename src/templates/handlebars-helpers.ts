/**
 * Helpers of handlebars prompt templates: Vertesia's `stringify` and `_now`
 * (`libraries/jst/src/handlebars` in vertesia/composableai), and Orrery's own, which clash with
 * none of Handlebars' or Vertesia's names. Truthiness follows Handlebars' `#if` (empty arrays are
 * false), so `{{#if (and a b)}}` agrees with `{{#if a}}{{#if b}}`. Helpers that answer JSON
 * answer it unescaped (a SafeString), as Vertesia's `stringify` does; text helpers are escaped
 * like any `{{value}}`.
 */
import Handlebars from 'handlebars';
import { valueToText } from './value-text.ts';

type Helper = (...args: unknown[]) => unknown;

const isTruthy = (v: unknown): boolean => (Array.isArray(v) ? v.length > 0 : Boolean(v));

/** Drops the trailing Handlebars `options` argument every helper receives. */
const withoutOptions = (args: unknown[]): unknown[] => args.slice(0, -1);

const text = (v: unknown): string => (v === null || v === undefined ? '' : valueToText(v));

export const PROMPT_HELPERS: Readonly<Record<string, Helper>> = {
  /** Vertesia's: null and undefined are empty, a string is itself, anything else compact JSON. */
  stringify: (...args) => {
    const [value] = withoutOptions(args);
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') return value;
    return new Handlebars.SafeString(JSON.stringify(value));
  },
  /** Vertesia's: the current time, ISO 8601. */
  _now: () => new Date().toISOString(),
  /** `{{json value}}`: pretty JSON (indent 2, or `{{json value 0}}` for one line). */
  json: (...args) => {
    const [value, indent] = withoutOptions(args);
    return new Handlebars.SafeString(JSON.stringify(value, null, typeof indent === 'number' ? indent : 2) ?? '');
  },
  eq: (...args) => {
    const [a, b] = withoutOptions(args);
    return a === b;
  },
  ne: (...args) => {
    const [a, b] = withoutOptions(args);
    return a !== b;
  },
  gt: (...args) => {
    const [a, b] = withoutOptions(args);
    return (a as number) > (b as number);
  },
  lt: (...args) => {
    const [a, b] = withoutOptions(args);
    return (a as number) < (b as number);
  },
  gte: (...args) => {
    const [a, b] = withoutOptions(args);
    return (a as number) >= (b as number);
  },
  lte: (...args) => {
    const [a, b] = withoutOptions(args);
    return (a as number) <= (b as number);
  },
  /** Like JavaScript's `&&`: the first falsy argument, else the last one. */
  and: (...args) => {
    const values = withoutOptions(args);
    for (const v of values) if (!isTruthy(v)) return v;
    return values[values.length - 1];
  },
  /** Like JavaScript's `||`: the first truthy argument, else the last one. Doubles as a default: `{{or nickname "friend"}}`. */
  or: (...args) => {
    const values = withoutOptions(args);
    for (const v of values) if (isTruthy(v)) return v;
    return values[values.length - 1];
  },
  not: (...args) => !isTruthy(withoutOptions(args)[0]),
  /** `{{join items ", "}}`; the separator defaults to ", " (prose, not JavaScript's ","). */
  join: (...args) => {
    const [list, separator] = withoutOptions(args);
    if (!Array.isArray(list)) return text(list);
    return list.map(text).join(typeof separator === 'string' ? separator : ', ');
  },
  /** `{{{{raw}}}}{{not parsed}}{{{{/raw}}}}`: the body verbatim, for prompts that show mustaches. */
  raw: function (this: unknown, ...args: unknown[]) {
    const options = args[args.length - 1] as { fn?: (context: unknown) => string };
    return options?.fn ? options.fn(this) : '';
  },
  upper: (...args) => text(withoutOptions(args)[0]).toUpperCase(),
  lower: (...args) => text(withoutOptions(args)[0]).toLowerCase(),
};
