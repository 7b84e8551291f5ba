/**
 * Field allow-listing for an AST (for one built by hand, or a `defaultQueryPath`). `parseLucene`
 * with `isField` does the same while parsing, with positions and for dropped clauses too.
 */
import { fieldsOf, type QueryNode } from './ast.ts';
import { UnknownFieldError } from './errors.ts';

/** Throws UnknownFieldError for the first field that `allowed` refuses, listing `listForMessage`. */
export const validateFields = (
  node: QueryNode,
  allowed: (field: string) => boolean,
  listForMessage: readonly string[],
): void => {
  for (const field of fieldsOf(node)) if (!allowed(field)) throw new UnknownFieldError(field, listForMessage);
};
