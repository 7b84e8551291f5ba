/**
 * `count_tokens` without a provider call: text counted with the o200k_base encoding (Anthropic's
 * tokenizer is not public, so this is an estimate of the same order) by `count` (a content worker
 * process), images and PDF documents at flat estimates. Bounded: a request with more text than
 * MAX_COUNTED_CHARS is refused before any counting.
 */
import type { ChatMessage } from '../../providers/driver.ts';
import { AnthropicRequestError } from './errors.ts';

/** The most characters of text one count_tokens request counts. */
const MAX_COUNTED_CHARS = 2_000_000;
/** An image's tokens: Anthropic's most for one image (about 1.15 megapixels, width × height / 750). */
const IMAGE_TOKENS = 1600;
/** A PDF's tokens per decoded byte: about 1,500 tokens for a 75 KB page of text and image. */
const PDF_TOKENS_PER_BYTE = 1 / 50;
/** What each message adds beyond its content (role and separators). */
const MESSAGE_OVERHEAD = 3;

/** Counts the tokens of a text. */
export type TokenCounter = (text: string) => Promise<number>;

export async function estimateTokens(
  messages: ChatMessage[],
  tools: unknown[] | undefined,
  count: TokenCounter,
): Promise<number> {
  const texts: string[] = [];
  let fixed = 0;
  for (const m of messages) {
    fixed += MESSAGE_OVERHEAD;
    if (typeof m.content === 'string') {
      texts.push(m.content);
      continue;
    }
    for (const part of m.content) {
      if (part.type === 'text' || part.type === 'thinking') texts.push(part.text);
      else if (part.type === 'tool_result') texts.push(part.content);
      else if (part.type === 'tool_use') texts.push(part.tool_name, JSON.stringify(part.tool_input ?? {}));
      else if (part.type === 'image') fixed += IMAGE_TOKENS;
      else fixed += Math.ceil(dataBytes(part.url) * PDF_TOKENS_PER_BYTE) || IMAGE_TOKENS;
    }
  }
  if (tools?.length) texts.push(JSON.stringify(tools));
  const chars = texts.reduce((n, t) => n + t.length, 0);
  if (chars > MAX_COUNTED_CHARS)
    throw new AnthropicRequestError(
      `count_tokens counts at most ${MAX_COUNTED_CHARS.toLocaleString('en')} characters of text; this request has ${chars.toLocaleString('en')}`,
      413,
    );
  // One worker task per text, in turn: each costs a message to the worker, and a request holds few.
  let tokens = fixed;
  for (const t of texts) if (t) tokens += await count(t);
  return tokens;
}

/** The decoded size of a data URL's bytes (0 for a link). */
function dataBytes(url: string): number {
  const comma = url.indexOf(',');
  return url.startsWith('data:') && comma > 0 ? Math.floor(((url.length - comma - 1) * 3) / 4) : 0;
}
