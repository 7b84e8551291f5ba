/** Unit tests of the parsers behind content processing: sniffing, RTF, the zip guard, languages. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import JSZip from 'jszip';
import { sniff, looksLikeText, decodeText } from '../../src/content/sniff.ts';
import { rtfToText } from '../../src/content/extract/rtf.ts';
import { guardZip, listZip } from '../../src/content/extract/zip-guard.ts';
import { detectLanguages } from '../../src/content/languages.ts';
import { ContentError } from '../../src/content/errors.ts';
import { fixture, makeDocx, makePdf, makePng } from './helpers.ts';

const rtf = (s: string) => rtfToText(Buffer.from(s, 'latin1'));
const code = (c: string) => (err: unknown) => err instanceof ContentError && err.code === c;

describe('sniff: the bytes decide, the name and declared type only refine text', () => {
  it('magic numbers win over names and declared types', async () => {
    assert.equal((await sniff(await makePng(4, 4), 'application/pdf', 'x.pdf')).mime, 'image/png');
    assert.equal((await sniff(await makePdf(1), 'text/plain', 'x.txt')).family, 'pdf');
    assert.equal((await sniff(await makeDocx(), undefined, 'x.bin')).family, 'docx');
    assert.equal((await sniff(fixture('memo.rtf'), 'application/octet-stream', 'memo')).family, 'rtf');
    assert.equal((await sniff(fixture('memo.odt'))).mime, 'application/vnd.oasis.opendocument.text');
  });
  it('text is recognised from its content, and refined by a textual declared type or name', async () => {
    const t = (s: string, decl?: string, name?: string) => sniff(Buffer.from(s), decl, name).then((r) => r.mime);
    assert.equal(await t('<!DOCTYPE html><html><body>x</body></html>', 'text/plain'), 'text/html');
    assert.equal(await t('From: a@b.c\nSubject: hi\n\nbody'), 'message/rfc822');
    assert.equal(await t('{"a": 1}'), 'application/json');
    assert.equal(await t('just words'), 'text/plain');
    assert.equal(await t('# Title', undefined, 'a.md'), 'text/markdown');
    assert.equal(await t('a,b\n1,2', 'text/csv'), 'text/csv');
    assert.equal(await t('plain words', 'application/pdf', 'fake.pdf'), 'text/plain', 'a "PDF" that is text is text');
    assert.equal((await sniff(Buffer.from([0, 1, 2, 3, 255, 0]), 'text/plain')).family, 'binary');
  });
  it('decodes UTF-8, UTF-16 with a byte order mark, and Windows-1252', () => {
    assert.equal(decodeText(Buffer.from('\uFEFFcafé', 'utf8')), 'café');
    assert.equal(decodeText(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('naïve', 'utf16le')])), 'naïve');
    assert.equal(decodeText(Buffer.from([0x63, 0x61, 0x66, 0xe9])), 'café');
    assert.equal(looksLikeText(Buffer.from([0x63, 0x61, 0x66, 0xe9])), true);
  });
});

describe('RTF to text', () => {
  it("skips the \\ucN fallback of \\uN characters (the officeparser 6.1.1 bug) and decodes \\'hh in the code page", () => {
    assert.equal(rtf("{\\rtf1\\ansi\\ansicpg1252 d\\u233\\'e9j\\u224\\'e0 vu}"), 'déjà vu');
    assert.equal(rtf("{\\rtf1\\uc2 x\\u8364\\'80\\'80y}"), 'x€y');
    assert.equal(rtf("{\\rtf1 caf\\'e9}"), 'café');
    assert.equal(rtf('{\\rtf1 \\u-3913?}'), '\uF0B7');
  });
  it('keeps paragraphs, tabs and escapes; drops font tables, pictures, fields instructions and \\* destinations', () => {
    const text = rtf(
      [
        '{\\rtf1{\\fonttbl{\\f0 Arial;}}{\\colortbl;\\red0\\green0\\blue0;}{\\*\\generator Writer;}{\\info{\\title T}}',
        'First\\par Second\\tab col\\line next {\\pict 89504e47} {\\field{\\*\\fldinst HYPERLINK "x"}{\\fldrslt link}} \\{braces\\} \\\\ end\\par}',
      ].join('\n'),
    );
    assert.equal(text, 'First\nSecond\tcol\nnext  link {braces} \\ end');
  });
});

describe('zip guard', () => {
  const zipOf = async (files: Record<string, Buffer | string>) => {
    const z = new JSZip();
    for (const [n, b] of Object.entries(files)) z.file(n, b);
    return z.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
  };
  it('lists the entries of a real container with their sizes', async () => {
    const entries = listZip(await zipOf({ 'a.txt': 'hello', 'dir/b.bin': Buffer.alloc(1000) }));
    assert.deepEqual(entries.map((e) => [e.name, e.size]).sort(), [
      ['a.txt', 5],
      ['dir/', 0],
      ['dir/b.bin', 1000],
    ]);
  });
  it('refuses a declared total over the limit, a truncated container, and an entry that inflates past its size', async () => {
    const big = await zipOf({ 'zeros.bin': Buffer.alloc(2_000_000) });
    assert.ok(big.length < 10_000);
    assert.throws(() => guardZip(big, 1_000_000), code('decompressed_size_limit'));
    assert.doesNotThrow(() => guardZip(big, 3_000_000));
    assert.throws(() => guardZip(big.subarray(0, big.length - 30), 3_000_000), code('corrupt_file'));
    // Lie in the central directory: 2,000,000 bytes declared as 10.
    const liar = Buffer.from(big);
    const cd = liar.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    liar.writeUInt32LE(10, cd + 24);
    assert.throws(
      () => guardZip(liar, 3_000_000),
      (err) => code('decompressed_size_limit')(err) && /inflates past/.test((err as Error).message),
    );
  });
});

describe('language heuristic', () => {
  it('names the language of a text, a second one when it has enough of its own words, and nothing when unsure', () => {
    assert.deepEqual(
      detectLanguages('The report of the committee is on the table and it was read by all of the members in the room.'),
      ['en'],
    );
    assert.deepEqual(
      detectLanguages(
        'Der Bericht des Ausschusses liegt auf dem Tisch und die Mitglieder haben ihn mit dem Vorstand gelesen, auch wenn es spät ist.',
      ),
      ['de'],
    );
    assert.deepEqual(
      detectLanguages('Это короткий текст на русском языке, написанный для проверки определения языка.'),
      ['ru'],
    );
    assert.deepEqual(detectLanguages('これは日本語の文章です。言語の判定を確かめるために書かれました。'), ['ja']);
    assert.deepEqual(detectLanguages('x y z'), []);
    assert.deepEqual(detectLanguages('1234 5678 90 12 34 56 78 90 12 34 56 78 90 12 34 56 78 90 12 34 56'), []);
  });
});
