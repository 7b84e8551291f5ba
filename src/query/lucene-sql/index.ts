/** Lucene AST → SQL over runs (both dialects), and the search data the store writes for each run. */
export { compileRunQuery, fullTextWords, isoBound, readsColumnsOnly, type CompileOptions } from './compile.ts';
export {
  runSearchDoc,
  runSearchFields,
  allWords,
  wordString,
  WORDS_KEY,
  type RunSearchDoc,
  type SearchSource,
} from './search-doc.ts';
export { ftsRow, tsvectorLiteral, type FtsRow } from './text-index.ts';
export { searchSql, TRUE, FALSE, type Cond, type SearchSql, type SearchPlan, type CmpOp } from './search-sql.ts';
