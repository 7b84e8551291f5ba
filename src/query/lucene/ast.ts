/**
 * The typed AST that Lucene queries are normalised into (style K4): frozen, `kind`-tagged, minimal.
 * Everything Lucene-specific (prefixes, implicit operators, field groups, `>=`, fuzzy, boost) is
 * resolved by the parser, so a compiler only ever sees these seven kinds.
 *
 * Invariants (the parser guarantees them; `Q` keeps them for hand-built nodes):
 * - `term.field === null` means the default field (see evaluate.ts: `defaultPath`, else the run text).
 * - `term.wildcard` is only true when `value` holds an unescaped `*` or `?`, and then `value` is a glob
 *   in which `\` escapes the next character (only `\*`, `\?` and `\\` occur); read it with
 *   `globParts`. When `wildcard` is false, `value` is the literal, unescaped text. A phrase is never
 *   a wildcard.
 * - `range` covers `[a TO b]`, `{a TO b}`, the mixed forms and `>`, `>=`, `<`, `<=` (one open end).
 *   A `null` bound is an open end and its `include*` flag is false. Ranges always name a field.
 *   `[* TO *]` and `field:*` become `exists`.
 * - `and` / `or` hold at least two nodes and never directly hold a node of their own kind.
 * - `not` never holds a `not`.
 * - `all` matches every run (`*`, `*:*`, the empty query).
 *
 * Boolean mapping (documented in `BOOLEAN_NOTE`): precedence is unary (`NOT`, `!`, `-`, `+`)
 * over `AND`/`&&` over `OR`/`||` over juxtaposition. A juxtaposed list of clauses follows Lucene's
 * required/prohibited/optional rule: `+x` clauses are required, negated clauses (`-x`, `!x`,
 * `NOT x`) are prohibited, the rest optional; when any clause is required the optional ones are
 * dropped (in Lucene they only affect scoring), otherwise at least one optional clause must match.
 * So `a b` = a OR b, `+a c` = a, `+a -b c` = a AND NOT b, `a -b` = a AND NOT b, and a list of
 * prohibited clauses alone (`-x`, `NOT x`) means "every run except those".
 */

type QueryNodeKind = 'term' | 'range' | 'exists' | 'and' | 'or' | 'not' | 'all';

export interface TermNode {
  readonly kind: 'term';
  /** A field path such as `status` or `parameters.customer.id`; null = the default field. */
  readonly field: string | null;
  readonly value: string;
  /** Written as a quoted phrase. */
  readonly phrase: boolean;
  /** `value` is a glob (see the invariants above). */
  readonly wildcard: boolean;
}

export interface RangeNode {
  readonly kind: 'range';
  readonly field: string;
  /** null = open end. */
  readonly lower: string | null;
  readonly upper: string | null;
  readonly includeLower: boolean;
  readonly includeUpper: boolean;
}

export interface ExistsNode {
  readonly kind: 'exists';
  readonly field: string;
}

interface AndNode {
  readonly kind: 'and';
  readonly nodes: readonly QueryNode[];
}

interface OrNode {
  readonly kind: 'or';
  readonly nodes: readonly QueryNode[];
}

interface NotNode {
  readonly kind: 'not';
  readonly node: QueryNode;
}

export interface AllNode {
  readonly kind: 'all';
}

export type QueryNode = TermNode | RangeNode | ExistsNode | AndNode | OrNode | NotNode | AllNode;

const ALL: AllNode = Object.freeze({ kind: 'all' });

/** Flattens same-kind children and collapses a single child, keeping the and/or invariants. */
const junction = (kind: 'and' | 'or', nodes: readonly QueryNode[]): QueryNode => {
  const flat: QueryNode[] = [];
  for (const n of nodes) {
    if (n.kind === kind) flat.push(...n.nodes);
    else flat.push(n);
  }
  if (flat.length === 0) throw new Error(`${kind} needs at least one node`);
  if (flat.length === 1) return flat[0];
  return Object.freeze({ kind, nodes: Object.freeze(flat) }) as AndNode | OrNode;
};

/** Node factories: every node is frozen, and the invariants above hold by construction. */
export const Q = Object.freeze({
  term: (field: string | null, value: string, opts: { phrase?: boolean; wildcard?: boolean } = {}): TermNode =>
    Object.freeze({
      kind: 'term',
      field,
      value,
      phrase: opts.phrase ?? false,
      wildcard: !opts.phrase && (opts.wildcard ?? false),
    }),
  range: (
    field: string,
    lower: string | null,
    upper: string | null,
    includeLower: boolean,
    includeUpper: boolean,
  ): RangeNode | ExistsNode =>
    lower === null && upper === null
      ? Object.freeze({ kind: 'exists', field })
      : Object.freeze({
          kind: 'range',
          field,
          lower,
          upper,
          includeLower: lower !== null && includeLower,
          includeUpper: upper !== null && includeUpper,
        }),
  exists: (field: string): ExistsNode => Object.freeze({ kind: 'exists', field }),
  and: (...nodes: QueryNode[]): QueryNode => junction('and', nodes),
  or: (...nodes: QueryNode[]): QueryNode => junction('or', nodes),
  /** Double negation cancels. */
  not: (node: QueryNode): QueryNode => (node.kind === 'not' ? node.node : Object.freeze({ kind: 'not', node })),
  all: (): AllNode => ALL,
});

/** One handler per kind: a compiler built on this does not compile until every kind is handled. */
export type QueryVisitor<R> = { readonly [K in QueryNodeKind]: (node: Extract<QueryNode, { kind: K }>) => R };

export const visit = <R>(node: QueryNode, v: QueryVisitor<R>): R => (v[node.kind] as (n: QueryNode) => R)(node);

/** Every field a node names, in order of appearance (`exists` included), without duplicates. */
export const fieldsOf = (node: QueryNode): string[] => {
  const out = new Set<string>();
  const walk = (n: QueryNode): void => {
    switch (n.kind) {
      case 'term':
        if (n.field !== null) out.add(n.field);
        return;
      case 'range':
      case 'exists':
        out.add(n.field);
        return;
      case 'and':
      case 'or':
        n.nodes.forEach(walk);
        return;
      case 'not':
        walk(n.node);
        return;
      case 'all':
        return;
    }
  };
  walk(node);
  return [...out];
};
