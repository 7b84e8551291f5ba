/** Lucene AST → SQL over runs (both dialects), and the search data the store writes for each run. */
export { compileRunQuery, fullTextWords, isoBound, readsColumnsOnly } from './compile.ts';
export { runSearchDoc, runSearchFields, allWords, type RunSearchDoc, type SearchSource } from './search-doc.ts';
export { ftsRow, tsvectorLiteral, type FtsRow } from './text-index.ts';
export { searchSql, TRUE, FALSE, type Cond, type SearchPlan } from './search-sql.ts';
