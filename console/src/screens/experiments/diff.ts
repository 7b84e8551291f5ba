/**
 * A word diff of two answers (longest common subsequence of their words), so the side-by-side
 * view marks what differs. Bounded: past MAX_WORDS words per side the rest is one changed piece.
 */
export interface Piece {
  text: string;
  changed: boolean;
}

const MAX_WORDS = 400;

export function wordDiff(a: string, b: string): { left: Piece[]; right: Piece[] } {
  const wa = a.split(/(\s+)/).filter(Boolean);
  const wb = b.split(/(\s+)/).filter(Boolean);
  const ha = wa.slice(0, MAX_WORDS);
  const hb = wb.slice(0, MAX_WORDS);
  // lcs[i][j]: the common subsequence's length of ha[i..] and hb[j..]
  const lcs = Array.from({ length: ha.length + 1 }, () => new Array<number>(hb.length + 1).fill(0));
  for (let i = ha.length - 1; i >= 0; i--)
    for (let j = hb.length - 1; j >= 0; j--)
      lcs[i][j] = ha[i] === hb[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const left: Piece[] = [];
  const right: Piece[] = [];
  const push = (out: Piece[], text: string, changed: boolean) => {
    const last = out[out.length - 1];
    if (last && last.changed === changed) last.text += text;
    else out.push({ text, changed });
  };
  let i = 0;
  let j = 0;
  while (i < ha.length && j < hb.length) {
    if (ha[i] === hb[j]) {
      push(left, ha[i++], false);
      push(right, hb[j++], false);
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      const w = ha[i++];
      push(left, w, /\S/.test(w)); // a space alone is not a change worth marking
    } else {
      const w = hb[j++];
      push(right, w, /\S/.test(w));
    }
  }
  for (; i < ha.length; i++) push(left, ha[i], /\S/.test(ha[i]));
  for (; j < hb.length; j++) push(right, hb[j], /\S/.test(hb[j]));
  if (wa.length > MAX_WORDS) push(left, wa.slice(MAX_WORDS).join(''), true);
  if (wb.length > MAX_WORDS) push(right, wb.slice(MAX_WORDS).join(''), true);
  return { left, right };
}
