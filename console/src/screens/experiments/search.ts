/** URL search params of the experiment screens (the router imports the validators). */
export type ExperimentsSearch = Record<string, never>;
export const validateExperimentsSearch = (_raw: Record<string, unknown>): ExperimentsSearch => ({});

export interface ExperimentDetailSearch {
  /** The two variants shown side by side (default: the first two). */
  a?: string;
  b?: string;
  /** The first item shown (a multiple of the page size). */
  offset?: number;
  /** Another experiment compared with this one. */
  with?: string;
}
export function validateExperimentDetailSearch(raw: Record<string, unknown>): ExperimentDetailSearch {
  const out: ExperimentDetailSearch = {};
  if (typeof raw.a === 'string' && raw.a.length <= 100) out.a = raw.a;
  if (typeof raw.b === 'string' && raw.b.length <= 100) out.b = raw.b;
  const o = Number(raw.offset);
  if (Number.isInteger(o) && o > 0 && o <= 100_000) out.offset = o;
  if (typeof raw.with === 'string' && raw.with.length > 0 && raw.with.length <= 100) out.with = raw.with;
  return out;
}
