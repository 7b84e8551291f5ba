/**
 * A find query the caller must fix: always a 400. Like the Lucene errors, it carries `code` and
 * `status` and imports nothing from the HTTP layer; the route maps it by `code`.
 */
export class FindQueryError extends Error {
  readonly status = 400;

  constructor(
    /** What is wrong and what to write instead, without the location. */
    readonly detail: string,
    /** Where in the query, e.g. `$or[1].properties.n.$gt`; empty for the query itself. */
    readonly at: string = '',
    /** `query_too_costly` when the query is valid but past a cost bound (ast.ts FIND_LIMITS). */
    readonly code: 'invalid_query' | 'query_too_costly' = 'invalid_query',
  ) {
    super(at ? `find query at ${at}: ${detail}` : `find query: ${detail}`);
    this.name = 'FindQueryError';
  }
}

/** A user-supplied name as it appears in a message: JSON-quoted and cut short. */
export const quoteName = (name: string): string => JSON.stringify(name.length > 120 ? `${name.slice(0, 120)}…` : name);
