/**
 * RTF to plain text. officeparser 6.1.1 reads RTF but ignores `\ucN`: every non-ASCII character
 * written the usual way (`\u233\'e9`, a Unicode value followed by its fallback) comes out twice
 * ("dééjàà"), which breaks word-for-word text. This is a small converter after the RTF 1.9.1
 * specification: groups with their state, ignorable and non-text destinations skipped, `\uN` with
 * its `\ucN` fallback skipped, `\'hh` decoded in the document's code page, paragraph, line, tab
 * and cell marks as text.
 */

/** Destinations whose content is not document text. */
const SKIP = new Set([
  'fonttbl',
  'colortbl',
  'stylesheet',
  'info',
  'pict',
  'objdata',
  'themedata',
  'colorschememapping',
  'datastore',
  'latentstyles',
  'listtable',
  'listoverridetable',
  'revtbl',
  'rsidtbl',
  'generator',
  'xmlnstbl',
  'mmathPr',
  'fldinst',
  'header',
  'headerl',
  'headerr',
  'headerf',
  'footer',
  'footerl',
  'footerr',
  'footerf',
  'private',
  'nonshppict',
  'blipuid',
  'filetbl',
  'pgdsctbl',
  'userprops',
  'docvar',
  'listpicture',
  'wgrffmtfilter',
  'pnseclvl',
  'ftnsep',
  'ftnsepc',
  'aftnsep',
  'aftnsepc',
  'bkmkstart',
  'bkmkend',
  'xe',
  'tc',
]);

const SYMBOLS: Record<string, string> = {
  par: '\n',
  line: '\n',
  sect: '\n',
  page: '\n',
  tab: '\t',
  cell: '\t',
  row: '\n',
  emdash: '\u2014',
  endash: '\u2013',
  bullet: '\u2022',
  lquote: '\u2018',
  rquote: '\u2019',
  ldblquote: '\u201c',
  rdblquote: '\u201d',
  emspace: '\u2003',
  enspace: '\u2002',
  qmspace: '\u2005',
  zwj: '\u200d',
  zwnj: '\u200c',
  ltrmark: '\u200e',
  rtlmark: '\u200f',
};

const CODEPAGES: Record<number, string> = {
  932: 'shift_jis',
  936: 'gbk',
  949: 'euc-kr',
  950: 'big5',
  10000: 'macintosh',
  65001: 'utf-8',
};

function decoderFor(codepage: number): InstanceType<typeof TextDecoder> {
  try {
    return new TextDecoder(CODEPAGES[codepage] ?? `windows-${codepage}`);
  } catch {
    return new TextDecoder('windows-1252');
  }
}

interface GroupState {
  skip: boolean;
  uc: number;
}

export function rtfToText(bytes: Uint8Array): string {
  // RTF is 7-bit text with 8-bit bytes only as escapes (or, from lax writers, raw): latin1 keeps each byte as one char.
  const src = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  let decoder = decoderFor(1252);
  const out: string[] = [];
  const stack: GroupState[] = [];
  let state: GroupState = { skip: false, uc: 1 };
  let pendingBytes: number[] = [];
  let skipChars = 0; // fallback characters still to drop after a \uN
  let groupStart = false; // just after '{': a \* or a destination word decides if the group is skipped

  const flushBytes = () => {
    if (pendingBytes.length) {
      if (!state.skip) out.push(decoder.decode(new Uint8Array(pendingBytes)));
      pendingBytes = [];
    }
  };
  const emit = (s: string) => {
    flushBytes();
    if (!state.skip) out.push(s);
  };

  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '{') {
      flushBytes();
      stack.push(state);
      state = { ...state };
      skipChars = 0;
      groupStart = true;
      i++;
      continue;
    }
    if (c === '}') {
      flushBytes();
      state = stack.pop() ?? { skip: false, uc: 1 };
      skipChars = 0;
      groupStart = false;
      i++;
      continue;
    }
    const atGroupStart = groupStart;
    groupStart = false;
    if (c === '\\') {
      const next = src[i + 1];
      if (next === undefined) break;
      if (next === "'") {
        const code = parseInt(src.substr(i + 2, 2), 16);
        i += 4;
        if (skipChars > 0) {
          skipChars--;
          continue;
        }
        if (!Number.isNaN(code)) pendingBytes.push(code);
        continue;
      }
      if (!/[a-zA-Z]/.test(next)) {
        // A control symbol: one character.
        i += 2;
        if (next === '*') {
          // An ignorable destination: none of them holds document text.
          if (atGroupStart) state.skip = true;
          continue;
        }
        if (skipChars > 0) {
          skipChars--;
          continue;
        }
        if (next === '\\' || next === '{' || next === '}') emit(next);
        else if (next === '~') emit('\u00a0');
        else if (next === '_') emit('\u2011');
        else if (next === '\n' || next === '\r') emit('\n');
        // '\-' (optional hyphen) and anything else: nothing visible.
        continue;
      }
      const m = /^([a-zA-Z]{1,32})(-?\d{1,10})? ?/.exec(src.slice(i + 1, i + 48));
      const word = m![1];
      const param = m![2] === undefined ? undefined : Number(m![2]);
      i += 1 + m![0].length;
      if (word === 'u' && param !== undefined) {
        flushBytes();
        if (!state.skip) out.push(String.fromCharCode(param < 0 ? param + 65536 : param));
        skipChars = state.uc;
        continue;
      }
      if (skipChars > 0) {
        skipChars--;
        continue;
      }
      if (word === 'uc') state.uc = param ?? 1;
      else if (word === 'ansicpg' && param !== undefined) {
        flushBytes();
        decoder = decoderFor(param);
      } else if (atGroupStart && SKIP.has(word)) state.skip = true;
      else if (SYMBOLS[word] !== undefined) emit(SYMBOLS[word]);
      continue;
    }
    i++;
    // Line breaks in the source are not text; other characters are.
    if (c === '\n' || c === '\r') continue;
    if (skipChars > 0) {
      skipChars--;
      continue;
    }
    if (c.charCodeAt(0) > 0x7f) pendingBytes.push(c.charCodeAt(0));
    else emit(c);
  }
  flushBytes();
  return out
    .join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/^\s+|\s+$/g, '');
}
