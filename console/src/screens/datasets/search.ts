/** URL search params of the dataset screens (the router imports the validators). */
export type DatasetsSearch = Record<string, never>;
export const validateDatasetsSearch = (_raw: Record<string, unknown>): DatasetsSearch => ({});

export interface DatasetDetailSearch {
  /** The version whose items are shown (default: the current one). */
  version?: number;
  /** The first item shown (a multiple of the page size). */
  offset?: number;
}
export function validateDatasetDetailSearch(raw: Record<string, unknown>): DatasetDetailSearch {
  const out: DatasetDetailSearch = {};
  const v = Number(raw.version);
  if (Number.isInteger(v) && v >= 1) out.version = v;
  const o = Number(raw.offset);
  if (Number.isInteger(o) && o > 0 && o <= 100_000) out.offset = o;
  return out;
}
