/**
 * Text, metadata and tokens of real files of every format, through HTTP and the official client:
 * created → processing → ready, the text word for word, page counts, dimensions, durations, and
 * a token count equal to gpt-tokenizer's o200k_base count of that text.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import {
  createObject,
  DOCX_TEXT,
  EML,
  EML_TEXT,
  fixture,
  HTML,
  HTML_TEXT,
  makeDocx,
  makeJpeg,
  makePdf,
  makePng,
  makePptx,
  makeWav,
  makeXlsx,
  makeZip,
  ODT_TEXT,
  PPTX_TEXT,
  processed,
  XLSX_TEXT,
} from './helpers.ts';

const sha256 = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const tokensOf = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

const ENGLISH =
  'The quick brown fox jumps over the lazy dog. It is the first line of the story, and the dog was not amused by this at all. ' +
  'Then the fox ran into the woods with the rest of the pack, which was waiting for it by the river.';
const FRENCH =
  "Le renard brun saute par-dessus le chien paresseux. C'est la première ligne de l'histoire, et le chien ne trouve pas cela drôle. " +
  "Puis le renard court dans les bois avec les autres, qui l'attendent au bord de la rivière pour la nuit.";

interface Case {
  name: string;
  bytes: () => Promise<Buffer> | Buffer;
  type?: string;
  text: string;
  metadata: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    name: 'notes.txt',
    bytes: () => Buffer.from(ENGLISH),
    text: ENGLISH,
    metadata: { type: 'document', mime_type: 'text/plain', languages: ['en'] },
  },
  {
    name: 'notes-fr.txt',
    bytes: () => Buffer.from(FRENCH),
    text: FRENCH,
    metadata: { type: 'document', mime_type: 'text/plain', languages: ['fr'] },
  },
  {
    name: 'readme.md',
    bytes: () => Buffer.from('# Title\n\nSome *emphasis* and `code`.\n'),
    text: '# Title\n\nSome *emphasis* and `code`.\n',
    metadata: { type: 'document', mime_type: 'text/markdown' },
  },
  {
    name: 'table.csv',
    bytes: () => Buffer.from('name,amount\r\n"ACME, Inc.",42\r\n'),
    text: 'name,amount\r\n"ACME, Inc.",42\r\n',
    metadata: { type: 'document', mime_type: 'text/csv' },
  },
  {
    name: 'data.json',
    bytes: () => Buffer.from('{"a": [1, 2], "b": "x"}'),
    text: '{"a": [1, 2], "b": "x"}',
    metadata: { type: 'document', mime_type: 'application/json' },
  },
  {
    name: 'feed.xml',
    bytes: () => Buffer.from('<?xml version="1.0"?>\n<note><to>Tove</to><body>Hi</body></note>'),
    text: '<?xml version="1.0"?>\n<note><to>Tove</to><body>Hi</body></note>',
    metadata: { type: 'document', mime_type: 'application/xml' },
  },
  {
    name: 'page.html',
    bytes: () => Buffer.from(HTML),
    text: HTML_TEXT,
    metadata: { type: 'document', mime_type: 'text/html' },
  },
  {
    name: 'report.pdf',
    bytes: () => makePdf(3),
    text: 'Page 1 begins here\nand ends on page 1.\n\f\nPage 2 begins here\nand ends on page 2.\n\f\nPage 3 begins here\nand ends on page 3.',
    metadata: { type: 'document', mime_type: 'application/pdf', page_count: 3, languages: ['en'] },
  },
  {
    name: 'report.docx',
    bytes: makeDocx,
    text: DOCX_TEXT,
    metadata: {
      type: 'document',
      mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    },
  },
  {
    name: 'deck.pptx',
    bytes: makePptx,
    text: PPTX_TEXT,
    metadata: {
      type: 'document',
      mime_type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      page_count: 2,
    },
  },
  {
    name: 'book.xlsx',
    bytes: makeXlsx,
    text: XLSX_TEXT,
    metadata: { type: 'document', mime_type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  },
  {
    name: 'memo.odt',
    bytes: () => fixture('memo.odt'),
    text: ODT_TEXT,
    metadata: { type: 'document', mime_type: 'application/vnd.oasis.opendocument.text', page_count: 1 },
  },
  {
    name: 'memo.rtf',
    bytes: () => fixture('memo.rtf'),
    text: ODT_TEXT,
    metadata: { type: 'document', mime_type: 'application/rtf' },
  },
  {
    name: 'message.eml',
    bytes: () => Buffer.from(EML),
    text: EML_TEXT,
    metadata: { type: 'document', mime_type: 'message/rfc822', languages: ['en'] },
  },
  {
    name: 'photo.png',
    bytes: () => makePng(1600, 1000),
    text: '',
    metadata: { type: 'image', mime_type: 'image/png', dimensions: { width: 1600, height: 1000 } },
  },
  {
    name: 'photo.jpg',
    bytes: () => makeJpeg(300, 500),
    text: '',
    metadata: { type: 'image', mime_type: 'image/jpeg', dimensions: { width: 300, height: 500 } },
  },
  { name: 'tone.wav', bytes: () => makeWav(2.5), text: '', metadata: { type: 'audio', duration: 2.5 } },
  {
    name: 'bundle.zip',
    bytes: () => makeZip({ 'a.txt': 'inside' }),
    text: '',
    metadata: { type: 'other', mime_type: 'application/zip' },
  },
];

// One database (ONE_DIALECT): what the extractors make of a file does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: content processing of every format`, () => {
    let srv: TestServer;
    const made = new Map<string, { id: string; bytes: Buffer }>();
    before(async () => {
      srv = await startTestServer(dialect);
      // Created together: the queue processes them with bounded concurrency.
      await Promise.all(
        CASES.map(async (c) => {
          const bytes = await c.bytes();
          made.set(c.name, { id: await createObject(srv, c.name, bytes, { type: c.type }), bytes });
        }),
      );
    });
    after(() => srv.close());

    for (const c of CASES) {
      it(`${c.name}: text word for word, metadata, tokens`, async () => {
        const { id, bytes } = made.get(c.name)!;
        const obj = await processed(srv, id);
        assert.equal(obj.status, 'ready', JSON.stringify(obj.error));
        assert.equal(obj.error, undefined);
        assert.equal(obj.text, c.text);
        assert.equal(obj.text_etag, sha256(c.text));
        assert.deepEqual(obj.tokens, { count: tokensOf(c.text), encoding: 'o200k_base', etag: sha256(c.text) });
        const { renditions: _r, ...metadata } = obj.metadata;
        const expected: Record<string, unknown> = { size: bytes.length, etag: sha256(bytes), ...c.metadata };
        if (typeof c.metadata.duration === 'number') {
          assert.ok(Math.abs(metadata.duration - c.metadata.duration) < 0.01, `duration ${metadata.duration}`);
          metadata.duration = c.metadata.duration;
          expected.mime_type = metadata.mime_type;
        }
        assert.deepEqual(metadata, expected);
        assert.deepEqual(await srv.api('GET', `/api/v1/objects/${id}/text`).then((r) => r.body), { text: c.text });
      });
    }

    it('the official client reads the text and the tokens (getObjectText, retrieve +text)', async () => {
      const client = srv.client();
      const { id } = made.get('report.pdf')!;
      await processed(srv, id);
      const text = (await client.objects.getObjectText(id)).text!;
      assert.equal(text.split('\n\f\n').length, 3, 'pages are separated by a form feed on its own line');
      const obj = await client.objects.retrieve(id, '+text');
      assert.equal(obj.text, text);
      assert.equal(obj.status, 'ready');
      assert.equal(obj.tokens!.count, tokensOf(text));
      assert.equal((obj.metadata as any).page_count, 3);
      assert.equal((await client.objects.retrieve(id)).text, undefined, 'text stays hidden without +text');
    });

    it('the type comes from the bytes: a PNG named .pdf is an image, a PDF declared text/plain is a PDF', async () => {
      const png = await makePng(64, 48);
      const pngAsPdf = await createObject(srv, 'scan.pdf', png, { type: 'application/pdf' });
      const pdf = await makePdf(2);
      const pdfAsText = await createObject(srv, 'plain.txt', pdf, { type: 'text/plain' });
      const a = await processed(srv, pngAsPdf);
      assert.equal(a.status, 'ready');
      assert.equal(a.metadata.type, 'image');
      assert.equal(a.metadata.mime_type, 'image/png');
      assert.deepEqual(a.metadata.dimensions, { width: 64, height: 48 });
      assert.equal(a.text, '');
      const b = await processed(srv, pdfAsText);
      assert.equal(b.status, 'ready');
      assert.equal(b.metadata.mime_type, 'application/pdf');
      assert.equal(b.metadata.page_count, 2);
      assert.match(b.text, /^Page 1 begins here/);
    });

    it('new content is processed again: text, tokens and metadata follow the content, caller metadata stays', async () => {
      const id = await createObject(srv, 'v1.txt', 'first version of the words');
      await processed(srv, id);
      await srv.api('PUT', `/api/v1/objects/${id}`, { metadata: { source_system: 'crm', type: 'document' } });
      const { upload } = await import('../objects/helpers.ts');
      const up = await upload(srv, 'v2.txt', 'second version, longer than the first one');
      const put = await srv.api('PUT', `/api/v1/objects/${id}`, { content: { source: up.id } });
      assert.equal(put.body.status, 'created', 'new content puts the object back to created');
      let obj = await processed(srv, id);
      // It may still show the first run's "ready" for an instant: wait for the new text.
      for (let i = 0; i < 100 && obj.text !== 'second version, longer than the first one'; i++)
        obj = await processed(srv, id);
      assert.equal(obj.text, 'second version, longer than the first one');
      assert.equal(obj.tokens.count, tokensOf(obj.text));
      assert.equal(obj.metadata.source_system, 'crm');
      assert.equal(obj.metadata.size, Buffer.byteLength(obj.text));
    });
  });
}
