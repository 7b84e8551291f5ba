/**
 * The two ways a query is refused. Both are the caller's fault (a 400); the HTTP layer maps them by
 * `code`, so nothing here depends on the error catalogue or on fastify.
 */

/** 1-based line and column of a 0-based offset (columns count UTF-16 code units, like JS strings). */
const lineColumn = (text: string, offset: number): { line: number; column: number } => {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
};

export class LuceneSyntaxError extends Error {
  readonly code = 'invalid_query';
  readonly status = 400;
  readonly line: number;
  readonly column: number;

  constructor(
    readonly query: string,
    /** 0-based offset into the query. */
    readonly position: number,
    /** What went wrong, without the position prefix. */
    readonly detail: string,
  ) {
    super(`Lucene syntax error at position ${position}: ${detail}`);
    this.name = 'LuceneSyntaxError';
    ({ line: this.line, column: this.column } = lineColumn(query, position));
  }
}

export class UnknownFieldError extends Error {
  readonly code = 'unknown_field';
  readonly status = 400;

  constructor(
    readonly field: string,
    /** The searchable fields, as shown to the user. */
    readonly searchable: readonly string[],
    /** 0-based offset of the field in the query, when known. */
    readonly position: number | null = null,
  ) {
    super(
      `Unknown field ${JSON.stringify(field)}${position === null ? '' : ` at position ${position}`}. ` +
        `Searchable fields: ${searchable.join(', ')}`,
    );
    this.name = 'UnknownFieldError';
  }
}
