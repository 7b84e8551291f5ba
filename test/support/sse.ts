/** A small SSE reader for tests: parses events off a fetch response as they arrive. */
export interface ReadEvent {
  id?: string;
  event: string;
  data: string;
}

export async function openStream(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const queue: ReadEvent[] = [];
  let ended = false;

  async function fill(): Promise<boolean> {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      return false;
    }
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const e: ReadEvent = { event: 'message', data: '' };
      const data: string[] = [];
      let any = false;
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        any = true;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'data') data.push(val);
        else if (field === 'event') e.event = val;
        else if (field === 'id') e.id = val;
      }
      if (any) {
        e.data = data.join('\n');
        queue.push(e);
      }
    }
    return true;
  }

  return {
    res,
    /** The next event, or undefined at the end of the stream. */
    async next(): Promise<ReadEvent | undefined> {
      while (!queue.length && !ended) await fill();
      return queue.shift();
    },
    async all(): Promise<ReadEvent[]> {
      const out: ReadEvent[] = [];
      for (let e = await this.next(); e; e = await this.next()) out.push(e);
      return out;
    },
    close() {
      controller.abort();
    },
  };
}
