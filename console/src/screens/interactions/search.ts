/** URL search params of the interactions screens (owned by that screen; the router imports these). */
export interface InteractionsSearch {
  /** Filter of the interactions list (name substring). */
  q?: string;
  /** The prompt template open in the templates editor. */
  prompt?: string;
}
const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
export const validateInteractionsSearch = (raw: Record<string, unknown>): InteractionsSearch => {
  const out: InteractionsSearch = {};
  const q = str(raw.q);
  const prompt = str(raw.prompt);
  if (q) out.q = q;
  if (prompt) out.prompt = prompt;
  return out;
};

export type InteractionDetailSearch = Record<string, never>;
export const validateInteractionDetailSearch = (_raw: Record<string, unknown>): InteractionDetailSearch => ({});
