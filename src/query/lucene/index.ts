/** Lucene queries for run search: parse → typed AST (→ SQL, elsewhere), and the reference evaluator. */
export * from './ast.ts';
export { LuceneSyntaxError, UnknownFieldError } from './errors.ts';
export { parseLucene, MAX_QUERY_DEPTH, MAX_QUERY_LENGTH, MAX_QUERY_TERMS } from './parse.ts';
export { validateFields } from './validate-fields.ts';
export * from './run-fields.ts';
export { resultText, promptText, runText, stringLeaves } from './run-text.ts';
export * from './values.ts';
export { matches, compileMatcher, type MatchOptions, type RunDocument } from './evaluate.ts';
