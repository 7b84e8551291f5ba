/** Mongo-style `find` queries: parse → frozen AST → SQL for SQLite and PostgreSQL (compile.ts: the semantics). */
export * from './ast.ts';
export { FindQueryError } from './errors.ts';
export { parseFind } from './parse.ts';
export { regexToGlob } from './regex.ts';
export { compileFind, compileFindReadingOnce, type FieldRef, type FieldResolver } from './compile.ts';
export { compileSort, type SortSpec } from './sort.ts';
