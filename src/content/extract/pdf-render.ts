/**
 * A PDF page as a PNG, with pdf.js drawing on @napi-rs/canvas (through unpdf), at the scale that
 * makes its longest side `maxSide` pixels (and never more pixels than the limit).
 *
 * Node 20 gotcha (notes/stack.md §5): pdf.js 5 calls `ArrayBuffer.prototype.transferToFixedLength`
 * (ES2024, missing from V8 11.3) while loading fonts, and the page comes out blank. The worker
 * thread that runs this installs a copying polyfill for it (worker/content-worker.ts); standard
 * fonts are drawn with a substitute face, legible but not the exact glyphs.
 */
import { getDocumentProxy, renderPageAsImage } from 'unpdf';
import { ContentError } from '../errors.ts';
import type { ContentLimits } from '../limits.ts';

export interface RenderedPage {
  png: Uint8Array;
  width: number;
  height: number;
  page_count: number;
}

export async function renderPdfPage(
  bytes: Uint8Array,
  pageNumber: number,
  maxSide: number,
  limits: ContentLimits,
): Promise<RenderedPage> {
  let pdf;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: false });
  } catch (err) {
    throw new ContentError('corrupt_file', `the PDF could not be read: ${(err as Error).message}`);
  }
  try {
    if (pdf.numPages > limits.maxPages) {
      throw new ContentError(
        'page_limit',
        `the PDF has ${pdf.numPages} pages, more than the limit of ${limits.maxPages} (ORRERY_CONTENT_MAX_PAGES)`,
      );
    }
    if (pageNumber > pdf.numPages) throw new ContentError('corrupt_file', `the PDF has no page ${pageNumber}`);
    const page = await pdf.getPage(pageNumber);
    const base = page.getViewport({ scale: 1 });
    let scale = maxSide / Math.max(base.width, base.height);
    // Never draw more pixels than an image may have.
    const pixels = base.width * base.height * scale * scale;
    if (pixels > limits.maxImagePixels) scale *= Math.sqrt(limits.maxImagePixels / pixels);
    if (!Number.isFinite(scale) || scale <= 0) throw new ContentError('corrupt_file', 'the PDF page has no size');
    const viewport = page.getViewport({ scale });
    const png = await renderPageAsImage(pdf, pageNumber, { canvasImport: () => import('@napi-rs/canvas'), scale });
    return {
      png: new Uint8Array(png),
      width: Math.ceil(viewport.width),
      height: Math.ceil(viewport.height),
      page_count: pdf.numPages,
    };
  } catch (err) {
    if (err instanceof ContentError) throw err;
    throw new ContentError('corrupt_file', `the PDF page could not be drawn: ${(err as Error).message}`);
  } finally {
    await pdf.destroy().catch(() => {});
  }
}
