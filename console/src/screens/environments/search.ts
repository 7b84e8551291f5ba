/** URL search params of the environments screen (owned by that screen; the router imports these). */
export interface EnvironmentsSearch {
  /** The selected environment (its models are listed). */
  env?: string;
}
export const validateEnvironmentsSearch = (raw: Record<string, unknown>): EnvironmentsSearch =>
  typeof raw.env === 'string' && raw.env ? { env: raw.env } : {};
