/**
 * The searchable fields of a run and how each one matches (see evaluate.ts for the semantics of
 * each kind). One list, so the parser's allow-list, the error message, the evaluator and the SQL
 * compiler cannot drift (style K4).
 */

/**
 * - keyword: exact, case-sensitive values (`*`/`?` globs); JSON numbers and booleans compare as such.
 * - text: words (case-insensitive tokens), phrases, one-token globs.
 * - number: like keyword; the values are JSON numbers.
 * - date: ISO 8601 instants; a term covers its precision (`2024-03` = the month, UTC).
 * - ref: `{id, name}` or a bare id string; matches like keyword on the id or the name.
 */
export type FieldKind = 'keyword' | 'text' | 'number' | 'date' | 'ref';

/** Fixed fields: name → kind. The name is also the path into the run document. */
const RUN_FIELDS = Object.freeze({
  id: 'keyword',
  status: 'keyword',
  modelId: 'keyword',
  model: 'keyword',
  tags: 'keyword',
  finish_reason: 'keyword',
  parent: 'keyword',
  trace_id: 'keyword',
  interaction: 'ref',
  environment: 'ref',
  result: 'text',
  prompt: 'text',
  'token_use.prompt': 'number',
  'token_use.result': 'number',
  'token_use.total': 'number',
  execution_time: 'number',
  'cost.total': 'number',
  /** The name of each tool call of the run's answer (`tool_use[].tool_name`). */
  'tool_use.tool_name': 'keyword',
  created_at: 'date',
  updated_at: 'date',
} as const satisfies Record<string, FieldKind>);

/**
 * Open-ended families: `<root>` and `<root>.<path>` for any path. String values match by the kind
 * given here; numbers and booleans as keyword values. `parameters` holds free text (prompt inputs),
 * `config` and `source` hold identifiers.
 */
export const RUN_FIELD_FAMILIES = Object.freeze({
  parameters: 'text',
  config: 'keyword',
  source: 'keyword',
  media: 'keyword',
} as const satisfies Record<string, FieldKind>);

/** Short names of family paths: `objects:<id>` finds the runs whose prompt showed that object. */
const RUN_FIELD_ALIASES: Readonly<Record<string, string>> = Object.freeze({ objects: 'media.objects' });

/** One path segment under a family: letters, digits, `_` and `-` (safe to bind as a JSON path key). */
const SEGMENT = /^[\p{L}\p{N}_-]+$/u;

/** Whether `key` can be one segment of a family path (so a query can ever reach it). */
export const isPathSegment = (key: string): boolean => SEGMENT.test(key);

export interface FieldSpec {
  readonly name: string;
  readonly kind: FieldKind;
  /** Keys from the run document's root. */
  readonly path: readonly string[];
  /** Whether the field is one of the families (`parameters.…`, `config.…`, `source.…`). */
  readonly family: boolean;
  /** `scores.<name>`: the run's latest score of that name (a run answers it at `scores.<name>.value`). */
  readonly score?: string;
}

/** The root of score fields: `scores.<name>` matches a run's latest score of that name as a keyword value. */
const SCORES = 'scores';

/** The spec of a searchable field, or null when the name is not searchable. */
export const runField = (name: string): FieldSpec | null => {
  if (Object.hasOwn(RUN_FIELD_ALIASES, name)) return runField(RUN_FIELD_ALIASES[name]!);
  if (Object.hasOwn(RUN_FIELDS, name)) {
    return { name, kind: RUN_FIELDS[name as keyof typeof RUN_FIELDS], path: name.split('.'), family: false };
  }
  const path = name.split('.');
  const root = path[0];
  if (root === SCORES) {
    if (path.length !== 2 || !SEGMENT.test(path[1])) return null;
    return { name, kind: 'keyword', path: [SCORES, path[1], 'value'], family: false, score: path[1] };
  }
  if (!Object.hasOwn(RUN_FIELD_FAMILIES, root)) return null;
  if (!path.slice(1).every((s) => SEGMENT.test(s))) return null;
  return { name, kind: RUN_FIELD_FAMILIES[root as keyof typeof RUN_FIELD_FAMILIES], path, family: true };
};

export const isRunField = (name: string): boolean => runField(name) !== null;

/** For "unknown field" messages. */
export const RUN_FIELD_LIST: readonly string[] = Object.freeze([
  ...Object.keys(RUN_FIELDS),
  ...Object.keys(RUN_FIELD_ALIASES),
  ...Object.keys(RUN_FIELD_FAMILIES).map((f) => `${f}.<path>`),
  `${SCORES}.<name>`,
]);
