/**
 * Token counts with the o200k_base encoding (GPT-4o and later), by gpt-tokenizer: pure JS, the
 * fastest of the libraries measured (notes/stack.md §5). Counted in a content worker process: a long text
 * takes tens of milliseconds per 100 KB, which must not stall the event loop. Special-token
 * strings in the text ("<|endoftext|>") are counted as the plain text they are, not refused.
 */
import { countTokens as count } from 'gpt-tokenizer/encoding/o200k_base';

const PLAIN = { disallowedSpecial: new Set<string>() };

export function countTokens(text: string): number {
  return count(text, PLAIN);
}
