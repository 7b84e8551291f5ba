/** Lucene AST → SQL over runs (both dialects), and the search data the store writes for each run. */
export { compileRunQuery, fullTextWords, isoBound, readsColumnsOnly } from './compile.ts';
export { runSearchDoc, runSearchFields, type RunSearchDoc, type SearchSource } from './search-doc.ts';
export { allWords, ftsRow, tsvectorLiteral, type FtsRow } from '../../db/run-text-index.ts';
export { searchSql, TRUE, FALSE, type Cond, type SearchPlan } from '../../db/run-search-sql.ts';
