import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readSse, type SseEvent } from '../../src/providers/sse.ts';

async function parse(parts: string[]): Promise<SseEvent[]> {
  const enc = new TextEncoder();
  async function* bytes() {
    for (const p of parts) yield enc.encode(p);
  }
  const out: SseEvent[] = [];
  for await (const e of readSse(bytes())) out.push(e);
  return out;
}

describe('readSse', () => {
  it('reads events split anywhere across reads, with \\n, \\r\\n and \\r line ends', async () => {
    const text = 'event: a\ndata: 1\n\nevent: b\r\ndata: 2\r\n\r\ndata: 3\r\rdata: x\ndata: y\n\n';
    const expected = [{ event: 'a', data: '1' }, { event: 'b', data: '2' }, { data: '3' }, { data: 'x\ny' }];
    assert.deepEqual(await parse([text]), expected);
    // every split point, including between \r and \n
    for (let i = 1; i < text.length; i++)
      assert.deepEqual(await parse([text.slice(0, i), text.slice(i)]), expected, `split at ${i}`);
  });

  it('skips comments and blank runs, keeps a last event without its blank line', async () => {
    assert.deepEqual(await parse([': ping\n\n\n\ndata:{"a":1}\n\ndata: tail']), [
      { data: '{"a":1}' },
      { data: 'tail' },
    ]);
  });

  it('decodes multi-byte characters split between reads', async () => {
    const bytes = new TextEncoder().encode('data: héllo 🙂\n\n');
    async function* two() {
      yield bytes.slice(0, 8);
      yield bytes.slice(8);
    }
    const out: SseEvent[] = [];
    for await (const e of readSse(two())) out.push(e);
    assert.deepEqual(out, [{ data: 'héllo 🙂' }]);
  });
});
