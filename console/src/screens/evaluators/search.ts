/** URL search params of the evaluator screens (the router imports the validators). */
export type EvaluatorsSearch = Record<string, never>;
export const validateEvaluatorsSearch = (_raw: Record<string, unknown>): EvaluatorsSearch => ({});

export interface EvaluatorDetailSearch {
  /** The version shown (default: the current one). */
  version?: number;
}
export function validateEvaluatorDetailSearch(raw: Record<string, unknown>): EvaluatorDetailSearch {
  const v = Number(raw.version);
  return Number.isInteger(v) && v >= 1 ? { version: v } : {};
}
