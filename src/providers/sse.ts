/**
 * A small Server-Sent Events reader (WHATWG "event stream" rules): lines end in \n, \r\n or \r,
 * `data:` lines of one event join with \n, a blank line dispatches, `:` lines are comments.
 * Provider SDKs hide these bytes; Orrery reads them itself so errors and usage stay exact.
 */
import { AnswerTooLarge } from './result-bound.ts';

export interface SseEvent {
  /** The `event:` field; absent means the default "message". */
  event?: string;
  data: string;
}

/**
 * `maxEventChars`: the most characters one event (or one line) may hold; a longer one (a stream
 * that never sends its line break) fails with AnswerTooLarge instead of growing without end.
 */
export async function* readSse(
  body: AsyncIterable<Uint8Array>,
  maxEventChars = Number.POSITIVE_INFINITY,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  let sawField = false;
  let eventChars = 0;

  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (!sawField) return undefined;
      const out: SseEvent = { data: data.join('\n') };
      if (event !== undefined) out.event = event;
      event = undefined;
      data = [];
      sawField = false;
      eventChars = 0;
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      eventChars += value.length;
      if (eventChars > maxEventChars) throw new AnswerTooLarge(maxEventChars);
      data.push(value);
      sawField = true;
    } else if (field === 'event') {
      event = value;
      sawField = true;
    }
    // id and retry mean nothing for a one-shot provider answer
    return undefined;
  };

  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (;;) {
      const at = buffer.search(/\r\n|\r|\n/);
      if (at === -1) break;
      // A lone \r at the very end may be the first half of \r\n: wait for more bytes.
      if (buffer[at] === '\r' && at === buffer.length - 1) break;
      const sepLength = buffer.startsWith('\r\n', at) ? 2 : 1;
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + sepLength);
      const ready = takeLine(line);
      if (ready) yield ready;
    }
    // What is left holds no line break: a line that never ends must not grow without end.
    if (buffer.length > maxEventChars) throw new AnswerTooLarge(maxEventChars);
  }
  buffer += decoder.decode();
  if (buffer.endsWith('\r')) buffer = buffer.slice(0, -1);
  if (buffer !== '') takeLine(buffer);
  // A last event without its blank line still counts: servers that close early should not lose it.
  const last = takeLine('');
  if (last) yield last;
}
