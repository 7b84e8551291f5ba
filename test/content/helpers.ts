/**
 * Real files of every format content processing reads, made by the tools that make them
 * (pdf-lib, docx, exceljs, pptxgenjs, sharp, JSZip) or kept small in test/fixtures/content, and
 * the steps shared by the content tests.
 */
import { readFileSync } from 'node:fs';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';
import ExcelJS from 'exceljs';
import PptxGenJS from 'pptxgenjs';
import JSZip from 'jszip';
import sharp from 'sharp';
import type { TestServer } from '../support/server.ts';
import { upload } from '../objects/helpers.ts';

export { processed } from '../objects/helpers.ts';

const FIXTURES = new URL('../fixtures/content/', import.meta.url);
export const fixture = (name: string) => readFileSync(new URL(name, FIXTURES));

/** A PDF whose page n holds the lines `lines(n)`. */
export async function makePdf(
  pages: number,
  lines: (n: number) => string[] = (n) => [`Page ${n} begins here`, `and ends on page ${n}.`],
): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let n = 1; n <= pages; n++) {
    const page = doc.addPage([595, 842]);
    lines(n).forEach((line, i) => page.drawText(line, { x: 50, y: 780 - i * 20, size: 14, font }));
  }
  return Buffer.from(await doc.save());
}

export async function makeDocx(): Promise<Buffer> {
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Quarterly report', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [
              new TextRun('Revenue grew by '),
              new TextRun({ text: 'twelve percent', bold: true }),
              new TextRun(' this quarter.'),
            ],
          }),
          new Paragraph('The team thanks every customer.'),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}
export const DOCX_TEXT =
  'Quarterly report\n\nRevenue grew by twelve percent this quarter.\n\nThe team thanks every customer.';

export async function makeXlsx(): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const sales = wb.addWorksheet('Sales');
  sales.addRow(['Region', 'Amount']);
  sales.addRow(['North', 10]);
  sales.addRow(['South', 20.5]);
  wb.addWorksheet('Notes').addRow(['hello world']);
  return Buffer.from(await wb.xlsx.writeBuffer());
}
export const XLSX_TEXT = 'Sales\nRegion\tAmount\nNorth\t10\nSouth\t20.5\n\nNotes\nhello world';

export async function makePptx(): Promise<Buffer> {
  // pptxgenjs's typings describe a namespace; at run time the default export is the class.
  const pptx = new (PptxGenJS as unknown as new () => import('pptxgenjs').default)();
  const one = pptx.addSlide();
  one.addText('First slide title', { x: 1, y: 1, w: 8, h: 1 });
  one.addText('Body of slide one', { x: 1, y: 2, w: 8, h: 1 });
  pptx.addSlide().addText('Second slide', { x: 1, y: 1, w: 8, h: 1 });
  return (await pptx.write({ outputType: 'nodebuffer' })) as Buffer;
}
export const PPTX_TEXT = 'First slide title\nBody of slide one\n\nSecond slide';

export const ODT_TEXT = 'Project memo\nThe launch moves to Thursday.\nBudget: twelve thousand euros, déjà approved.';

export const EML = [
  'From: Ada Lovelace <ada@example.com>',
  'To: Charles Babbage <charles@example.com>',
  'Subject: =?UTF-8?Q?The_engine_=E2=80=94_notes?=',
  'Date: Mon, 10 Jun 2024 09:30:00 +0000',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: quoted-printable',
  '',
  'The analytical engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.',
  '--b1',
  'Content-Type: text/plain; name="notes.txt"',
  'Content-Disposition: attachment; filename="notes.txt"',
  '',
  'attached notes',
  '--b1--',
  '',
].join('\r\n');
export const EML_TEXT = [
  'Subject: The engine — notes',
  'From: Ada Lovelace <ada@example.com>',
  'To: Charles Babbage <charles@example.com>',
  'Date: 2024-06-10T09:30:00.000Z',
  '',
  'The analytical engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.',
  '',
  'Attachments: notes.txt',
].join('\n');

export const HTML = `<!doctype html><html><head><title>Not shown</title><style>p { color: red }</style>
<script>console.log("not shown either")</script></head>
<body><h1>Welcome Home</h1><p>First <b>bold</b> paragraph with a <a href="https://example.com/x">link</a>.</p>
<ul><li>one</li><li>two</li></ul><img src="x.png" alt="no"><noscript>hidden</noscript></body></html>`;
export const HTML_TEXT = 'Welcome Home\n\nFirst bold paragraph with a link.\n\n * one\n * two';

export async function makePng(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 40 } } })
    .png()
    .toBuffer();
}

export async function makeJpeg(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 20, g: 120, b: 240 } } })
    .jpeg()
    .toBuffer();
}

/** A mono 16-bit PCM WAV of `seconds` of a 440 Hz tone (the RIFF layout any recorder writes). */
export function makeWav(seconds: number, rate = 8000): Buffer {
  const samples = Math.round(seconds * rate);
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++)
    data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / rate) * 8000), i * 2);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVE', 8);
  head.write('fmt ', 12);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(1, 22);
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate * 2, 28);
  head.writeUInt16LE(2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36);
  head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

export async function makeZip(files: Record<string, string | Buffer>): Promise<Buffer> {
  const zip = new JSZip();
  for (const [name, body] of Object.entries(files)) zip.file(name, body);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

/** Upload the bytes, create an object on them, answer its id. */
export async function createObject(
  srv: TestServer,
  name: string,
  bytes: string | Buffer,
  opts: { type?: string; token?: string } = {},
): Promise<string> {
  const up = await upload(srv, name, bytes, { type: opts.type, token: opts.token });
  const r = await srv.api(
    'POST',
    '/api/v1/objects',
    { name, content: { source: up.id, ...(opts.type ? { type: opts.type } : {}) } },
    opts.token,
  );
  if (r.status !== 200) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}
