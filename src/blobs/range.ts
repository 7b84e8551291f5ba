/**
 * The HTTP Range header (RFC 9110 §14), single ranges only: `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * Several ranges are answered with the whole body (allowed: a server may ignore Range).
 */
import type { ByteRange } from './blob-store.ts';

export type RangeAnswer = { kind: 'full' } | { kind: 'partial'; range: ByteRange } | { kind: 'unsatisfiable' };

export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (!header) return { kind: 'full' };
  const m = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!m) return { kind: 'full' };
  const specs = m[1]
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (specs.length !== 1) return { kind: 'full' };
  const r = /^(\d*)\s*-\s*(\d*)$/.exec(specs[0]);
  if (!r || (r[1] === '' && r[2] === '')) return { kind: 'full' };
  if (r[1] === '') {
    // Suffix: the last n bytes.
    const n = Number(r[2]);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(size - n, 0), end: size - 1 } };
  }
  const start = Number(r[1]);
  const end = r[2] === '' ? size - 1 : Math.min(Number(r[2]), size - 1);
  if (r[2] !== '' && Number(r[2]) < start) return { kind: 'full' }; // invalid spec: ignore the header
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end } };
}
