/**
 * The parsed form of a find query (style K4): frozen, `kind`-tagged nodes, and the operator
 * allow-lists as `as const` arrays that the parser, its messages and the tests share.
 */

/** Operators that combine whole match objects. */
export const LOGICAL_OPERATORS = ['$and', '$or', '$nor'] as const;
/** Operators inside a field's operator object: `{field: {$gt: 1, $lt: 5}}`. */
export const FIELD_OPERATORS = [
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exists',
  '$regex',
  '$options',
  '$not',
  '$all',
  '$size',
  '$elemMatch',
] as const;
export type LogicalOperator = (typeof LOGICAL_OPERATORS)[number];
export type FieldOperator = (typeof FIELD_OPERATORS)[number];
/** `$options` letters: `i` folds ASCII case; `s` is accepted and changes nothing (`.` always matches newlines). */
export const REGEX_OPTIONS = ['i', 's'] as const;

export const FIND_LIMITS = Object.freeze({
  /** Nesting of objects and arrays in the query. */
  depth: 16,
  /** Conditions, logical operators and array-operand elements; `$in` scalars do not count (one bound JSON array). */
  clauses: 500,
  /** Values in one `$in` / `$nin`. */
  inValues: 100_000,
  /** Segments of one dotted path. */
  pathSegments: 16,
  /** Characters of one field name. */
  fieldLength: 500,
  /** Characters of one `$regex`. */
  regexLength: 1000,
  /** Keys of one sort. */
  sortKeys: 8,
  /**
   * Scans of a JSON value (each EXISTS over json_each / jsonb paths) in one compiled query, after
   * $or/$and/$nor fan-out. Each re-reads the whole stored document per row, so a few dozen on a
   * large document cost seconds and gigabytes; the compiler refuses more before any SQL runs.
   */
  jsonConditions: 32,
});

/** A JSON value that a condition compares with: scalars and arrays of them (never objects). */
export type FindValue = string | number | boolean | null | readonly FindValue[];
export type Comparison = 'gt' | 'gte' | 'lt' | 'lte';

export type MatchNode =
  | { readonly kind: 'and' | 'or' | 'nor'; readonly nodes: readonly MatchNode[] }
  | { readonly kind: 'field'; readonly field: string; readonly path: readonly string[]; readonly cond: Cond };

export type Cond =
  | { readonly kind: 'eq'; readonly value: FindValue }
  | { readonly kind: 'in'; readonly values: readonly FindValue[] }
  | { readonly kind: 'cmp'; readonly op: Comparison; readonly value: string | number }
  | { readonly kind: 'exists'; readonly exists: boolean }
  /** `glob`: the regex as a GLOB pattern (regex.ts); lower-case when `fold`. */
  | { readonly kind: 'regex'; readonly source: string; readonly glob: string; readonly fold: boolean }
  | { readonly kind: 'size'; readonly size: number }
  /** `$elemMatch` with operators: some element of an array satisfies `cond`, as one value. */
  | { readonly kind: 'elemMatch'; readonly cond: Cond }
  /** `$elemMatch` with fields: some element that is an object matches `match`. */
  | { readonly kind: 'elemMatchDoc'; readonly match: MatchNode }
  | { readonly kind: 'not'; readonly cond: Cond }
  | { readonly kind: 'every'; readonly conds: readonly Cond[] };
