/**
 * Text from documents, in the order a reader reads them. These run inside a processing worker
 * thread (worker/content-worker.ts): a hostile file can exhaust only that thread's heap or time.
 *
 * - PDF (unpdf/pdf.js): page by page, pages joined by a line holding a form feed ("\n\f\n").
 * - DOCX (mammoth): paragraphs separated by a blank line, as mammoth gives them.
 * - PPTX (officeparser): slide after slide (speaker notes left out), slides separated by a blank line.
 * - XLSX (officeparser): sheet after sheet: the sheet name on a line, then one line per row with
 *   the cells separated by tabs; sheets separated by a blank line.
 * - ODT, ODS, ODP (officeparser): its plain text, one line per paragraph.
 * - RTF (rtf.ts), HTML (html-to-text: visible text only), e-mail (postal-mime: the main headers,
 *   a blank line, the text body, then the names of attachments), other text as it is.
 */
import mammoth from 'mammoth';
import { parseOffice, type OfficeContentNode } from 'officeparser';
import { convert as htmlToText } from 'html-to-text';
import PostalMime from 'postal-mime';
import { getDocumentProxy } from 'unpdf';
import { ContentError } from '../errors.ts';
import type { ContentLimits } from '../limits.ts';
import { decodeText, type ContentFamily } from '../sniff.ts';
import { guardZip, listZip, readZipEntry, type ZipEntry } from './zip-guard.ts';
import { rtfToText } from './rtf.ts';

export interface ExtractedFacts {
  page_count?: number;
}

export interface Extracted {
  text: string;
  facts: ExtractedFacts;
}

const PAGE_SEPARATOR = '\n\f\n';

export async function extractText(
  family: ContentFamily,
  mime: string,
  bytes: Uint8Array,
  limits: ContentLimits,
): Promise<Extracted> {
  switch (family) {
    case 'pdf':
      return pdfText(bytes, limits);
    case 'docx':
      return docxText(bytes, limits);
    case 'pptx':
      return pptxText(bytes, limits);
    case 'xlsx':
      return xlsxText(bytes, limits);
    case 'odf':
      return odfText(bytes, limits);
    case 'rtf':
      return { text: rtfToText(bytes), facts: {} };
    case 'html':
      return { text: htmlText(decodeText(bytes)), facts: {} };
    case 'eml':
      return { text: await mailText(bytes), facts: {} };
    case 'text':
      return { text: decodeText(bytes), facts: {} };
    case 'archive':
      // Archives are not unpacked; a zip's directory is read, so a damaged one is reported.
      if (mime === 'application/zip') listZip(bytes);
      return { text: '', facts: {} };
    default:
      // Images, audio, video, archives and unknown bytes have no text.
      return { text: '', facts: {} };
  }
}

const corrupt = (what: string, err: unknown) =>
  new ContentError(
    'corrupt_file',
    `the ${what} could not be read: ${err instanceof Error ? err.message : String(err)}`,
  );

async function pdfText(bytes: Uint8Array, limits: ContentLimits): Promise<Extracted> {
  let pdf;
  try {
    // A copy: pdf.js takes ownership of (and may detach) the buffer it is given.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: false });
  } catch (err) {
    if ((err as { name?: string }).name === 'PasswordException')
      throw new ContentError('unsupported_file', 'the PDF is encrypted with a password');
    throw corrupt('PDF', err);
  }
  try {
    const pages = pdf.numPages;
    if (pages > limits.maxPages) {
      throw new ContentError(
        'page_limit',
        `the PDF has ${pages} pages, more than the limit of ${limits.maxPages} (ORRERY_CONTENT_MAX_PAGES)`,
      );
    }
    const texts: string[] = [];
    for (let n = 1; n <= pages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      let t = '';
      for (const item of content.items) {
        if ('str' in item) t += item.str + (item.hasEOL ? '\n' : '');
      }
      texts.push(t.replace(/\s+$/, ''));
      page.cleanup();
    }
    return { text: texts.join(PAGE_SEPARATOR), facts: { page_count: pages } };
  } catch (err) {
    if (err instanceof ContentError) throw err;
    throw corrupt('PDF', err);
  } finally {
    await pdf.destroy().catch(() => {});
  }
}

/** `<Pages>` of docProps/app.xml (written by Word and LibreOffice when they save), when present. */
function appPages(bytes: Uint8Array, entries: ZipEntry[], tag: 'Pages' | 'Slides'): number | undefined {
  const xml = readZipEntry(bytes, entries, 'docProps/app.xml')?.toString('utf8');
  const m = xml && new RegExp(`<(?:\\w+:)?${tag}>(\\d+)</`).exec(xml);
  return m ? Number(m[1]) : undefined;
}

async function docxText(bytes: Uint8Array, limits: ContentLimits): Promise<Extracted> {
  const entries = guardZip(bytes, limits.maxDecompressedBytes);
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({
      buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    }));
  } catch (err) {
    throw corrupt('DOCX document', err);
  }
  const pages = appPages(bytes, entries, 'Pages');
  return { text: value.replace(/\s+$/, ''), facts: pages ? { page_count: pages } : {} };
}

async function officeAst(bytes: Uint8Array, what: string) {
  try {
    return await parseOffice(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
      ignoreNotes: true,
      extractAttachments: false,
      ocr: false,
      includeRawContent: false,
      newlineDelimiter: '\n',
    });
  } catch (err) {
    throw corrupt(what, err);
  }
}

/** The text of a node: its own text, or its children's joined by `sep`. */
function nodeText(node: OfficeContentNode, sep = ''): string {
  if (node.children?.length) return node.children.map((c) => nodeText(c)).join(sep);
  return node.text ?? '';
}

async function pptxText(bytes: Uint8Array, limits: ContentLimits): Promise<Extracted> {
  const entries = guardZip(bytes, limits.maxDecompressedBytes);
  const slides = entries.filter((e) => /^ppt\/slides\/slide\d+\.xml$/.test(e.name)).length;
  if (slides > limits.maxPages) {
    throw new ContentError(
      'page_limit',
      `the presentation has ${slides} slides, more than the limit of ${limits.maxPages} (ORRERY_CONTENT_MAX_PAGES)`,
    );
  }
  const ast = await officeAst(bytes, 'PPTX presentation');
  const texts = ast.content
    .filter((n) => n.type === 'slide')
    .map((slide) =>
      (slide.children ?? [])
        .map((p) => nodeText(p))
        .filter((t) => t.trim() !== '')
        .join('\n'),
    );
  return { text: texts.join('\n\n'), facts: { page_count: slides } };
}

async function xlsxText(bytes: Uint8Array, limits: ContentLimits): Promise<Extracted> {
  guardZip(bytes, limits.maxDecompressedBytes);
  const ast = await officeAst(bytes, 'XLSX workbook');
  const sheets = ast.content
    .filter((n) => n.type === 'sheet')
    .map((sheet) => {
      const name = (sheet.metadata as { sheetName?: string } | undefined)?.sheetName;
      const rows = (sheet.children ?? [])
        .filter((r) => r.type === 'row')
        .map((row) => {
          const cells: string[] = [];
          for (const cell of row.children ?? []) {
            const col = (cell.metadata as { col?: number } | undefined)?.col;
            const text = nodeText(cell).replace(/[\t\r\n]+/g, ' ');
            // Keep columns aligned: a cell after empty ones lands in its own column.
            if (typeof col === 'number' && col >= cells.length && col < cells.length + 1000)
              while (cells.length < col) cells.push('');
            cells.push(text);
          }
          return cells.join('\t');
        });
      return [...(name ? [name] : []), ...rows].join('\n');
    });
  return { text: sheets.join('\n\n'), facts: {} };
}

async function odfText(bytes: Uint8Array, limits: ContentLimits): Promise<Extracted> {
  const entries = guardZip(bytes, limits.maxDecompressedBytes);
  const ast = await officeAst(bytes, 'OpenDocument file');
  const meta = readZipEntry(bytes, entries, 'meta.xml')?.toString('utf8');
  const m = meta && /meta:page-count="(\d+)"/.exec(meta);
  return { text: ast.toText().replace(/\s+$/, ''), facts: m ? { page_count: Number(m[1]) } : {} };
}

/** Visible text: no markup, scripts, styles or link targets; headings keep their case; no wrapping. */
function htmlText(html: string): string {
  return htmlToText(html, {
    wordwrap: false,
    baseElements: { selectors: ['body'], returnDomByDefault: true },
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'template', format: 'skip' },
      { selector: 'head', format: 'skip' },
      ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((h) => ({ selector: h, options: { uppercase: false } })),
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  }).trim();
}

async function mailText(bytes: Uint8Array): Promise<string> {
  let email;
  try {
    email = await PostalMime.parse(new Uint8Array(bytes), { maxNestingDepth: 20, attachmentEncoding: 'arraybuffer' });
  } catch (err) {
    throw corrupt('e-mail message', err);
  }
  const who = (a: { name?: string; address?: string } | undefined) =>
    a ? (a.name ? `${a.name} <${a.address ?? ''}>` : (a.address ?? '')) : '';
  const list = (xs: Array<{ name?: string; address?: string }> | undefined) =>
    (xs ?? []).map(who).filter(Boolean).join(', ');
  const head = [
    email.subject ? `Subject: ${email.subject}` : '',
    email.from ? `From: ${who(email.from as { name?: string; address?: string })}` : '',
    email.to?.length ? `To: ${list(email.to as never)}` : '',
    email.cc?.length ? `Cc: ${list(email.cc as never)}` : '',
    email.date ? `Date: ${email.date}` : '',
  ].filter(Boolean);
  const body = (email.text ?? (email.html ? htmlText(email.html) : '')).replace(/\r\n/g, '\n').trim();
  const files = email.attachments.map((a) => a.filename).filter((f): f is string => !!f);
  return [head.join('\n'), body, files.length ? `Attachments: ${files.join(', ')}` : ''].filter(Boolean).join('\n\n');
}
