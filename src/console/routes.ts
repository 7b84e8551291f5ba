/**
 * The web console (issue 19): the single-page app built from console/ by scripts/build-console.mjs
 * into console/dist/, served by this process. Public context (style F1): the app itself holds no
 * data; every screen talks to /api/v1 with the signed-in user's token.
 *
 * - `/assets/*`: hashed, immutable files (cached for a year).
 * - Any other GET that no route answers and that asks for HTML (a client route such as /runs/…):
 *   index.html, never cached, so a new build is picked up on the next load.
 * - Anything else (/api/v1/nope, a GET for JSON) keeps the JSON 404 of the not-found handler.
 * - Without a build (run from sources), `GET /` explains how to build instead of failing.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';

/** console/dist, from src/console (tsx) and from dist/console (the compiled build) alike. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../console/dist/', import.meta.url));

/**
 * Nothing from another origin. CodeMirror and virtualised tables set inline styles, hence
 * 'unsafe-inline' for styles only; scripts are the bundle's own files. Blob and data URLs serve
 * downloads and image previews made in the page.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SERVER_PATHS = /^\/(api|health|ready|metrics|blobs|files)(\/|$)/;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Orrery</title></head>
<body><main><h1>Orrery</h1>
<p>The web console is not built. Run <code>npm run build</code> (or <code>npm install</code>, which builds it), then restart the server.</p>
<p>The API is at <code>/api/v1</code> (<a href="/api/v1/openapi.json">OpenAPI</a>).</p></main></body></html>`;

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

const wantsHtml = (req: FastifyRequest) => {
  const accept = req.headers.accept;
  return !accept || accept.includes('text/html') || accept.includes('*/*');
};

const escapeAttribute = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** ORRERY_TRACE_URL for the run page's trace link, as a meta tag (the console reads it there). */
const withTraceUrl = (html: string, traceUrl: string | undefined) =>
  traceUrl
    ? html.replace('</head>', `<meta name="orrery-trace-url" content="${escapeAttribute(traceUrl)}" /></head>`)
    : html;

export const consoleRoutes: FastifyPluginAsync<{ dist?: string; traceUrl?: string }> = async (app, opts) => {
  const dist = opts.dist ?? CONSOLE_DIST;
  const indexFile = join(dist, 'index.html');
  const assets = join(dist, 'assets');

  if (existsSync(assets)) {
    await app.register(fastifyStatic, {
      root: assets,
      prefix: '/assets/',
      decorateReply: false,
      index: false,
      list: false,
      dotfiles: 'deny',
      cacheControl: true,
      maxAge: 365 * 24 * 3600 * 1000,
      immutable: true,
      etag: true,
      lastModified: false,
      schemaHide: true,
      setHeaders: (reply) => {
        reply.header('content-security-policy', CONSOLE_CSP).header('x-content-type-options', 'nosniff');
      },
    });
  }

  const sendIndex = async (reply: FastifyReply) => {
    let html: string;
    try {
      html = await readFile(indexFile, 'utf8');
    } catch {
      return securityHeaders(reply)
        .code(503)
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(NOT_BUILT);
    }
    return securityHeaders(reply)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(withTraceUrl(html, opts.traceUrl));
  };

  app.get('/', { schema: { hide: true } }, (_req, reply) => sendIndex(reply));
  // Client routes: any GET no other route answers. Server paths and non-HTML requests keep the
  // JSON 404 of the not-found handler.
  app.get('/*', { schema: { hide: true } }, (req, reply) => {
    const path = req.url.split('?')[0];
    if (SERVER_PATHS.test(path) || path.startsWith('/assets/') || !wantsHtml(req)) return reply.callNotFound();
    return sendIndex(reply);
  });
};
