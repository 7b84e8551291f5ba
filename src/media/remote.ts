/**
 * An `https` media input read by Orrery, for providers that take media as bytes only (Bedrock,
 * Gemini): through the outbound agent, so the egress policy checks every address connected to
 * (redirects included, each hop a new connection), bounded in bytes while the answer streams in
 * and in time by ORRERY_MEDIA_FETCH_TIMEOUT. Every failure is a 4xx naming the parameter.
 */
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BadRequest, PayloadTooLarge } from '../util/errors.ts';

/** Redirects followed at most; each must stay https. */
const MAX_MEDIA_REDIRECTS = 3;

export interface RemoteFetch {
  dispatcher: () => Dispatcher;
  timeoutMs: number;
}

/** The input's bytes and the type its answer declared; `read` bounds the body to `limit` bytes. */
export async function fetchMedia(
  remote: RemoteFetch,
  url: string,
  limit: number,
  param: string,
  read: (body: Readable, limit: number, param: string) => Promise<Buffer>,
): Promise<{ bytes: Buffer; type: string | undefined }> {
  // One deadline for every hop and the whole body; cleared once done, so it never fires on a finished read.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new TimeoutError()), remote.timeoutMs);
  try {
    return await fetchHops(remote, url, limit, param, read, deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** A body not read: dropped, its late errors (an abort after the answer) swallowed. */
const drop = (body: Readable) => {
  body.on('error', () => {});
  body.destroy();
};

async function fetchHops(
  remote: RemoteFetch,
  url: string,
  limit: number,
  param: string,
  read: (body: Readable, limit: number, param: string) => Promise<Buffer>,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; type: string | undefined }> {
  let at = new URL(url);
  for (let hop = 0; ; hop++) {
    let answer: Dispatcher.ResponseData;
    try {
      answer = await remote.dispatcher().request({
        origin: at.origin,
        path: `${at.pathname}${at.search}`,
        method: 'GET',
        signal,
        headersTimeout: remote.timeoutMs,
        bodyTimeout: remote.timeoutMs,
      });
    } catch (err) {
      throw refusal(err, url, param, remote.timeoutMs);
    }
    const { statusCode, headers, body } = answer;
    const location = typeof headers.location === 'string' ? headers.location : undefined;
    if (statusCode >= 300 && statusCode < 400 && location) {
      drop(body);
      if (hop >= MAX_MEDIA_REDIRECTS)
        throw new BadRequest(`${param}: ${url} redirects more than ${MAX_MEDIA_REDIRECTS} times`);
      at = new URL(location, at);
      if (at.protocol !== 'https:')
        throw new BadRequest(`${param}: ${url} redirects to a ${at.protocol.slice(0, -1)} URL; only https is fetched`);
      continue;
    }
    if (statusCode !== 200) {
      drop(body);
      throw new BadRequest(`${param}: fetching ${url} answered HTTP ${statusCode}; give a URL that answers 200`);
    }
    const declared = Number(headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      drop(body);
      throw new PayloadTooLarge(
        `${param}: ${url} is ${declared} bytes; the limit is ${limit} (ORRERY_MEDIA_MAX_BYTES, ORRERY_MEDIA_MAX_PDF_BYTES)`,
      );
    }
    try {
      const bytes = await read(body as Readable, limit, param);
      const type = typeof headers['content-type'] === 'string' ? headers['content-type'] : undefined;
      return { bytes, type: type?.split(';')[0].trim().toLowerCase() };
    } catch (err) {
      drop(body);
      if (err instanceof PayloadTooLarge) throw err;
      throw refusal(err, url, param, remote.timeoutMs);
    }
  }
}

function refusal(err: unknown, url: string, param: string, timeoutMs: number): Error {
  const e = err as { name?: string; code?: string; message?: string; cause?: { name?: string; message?: string } };
  if (e?.name === 'EgressRefused' || e?.cause?.name === 'EgressRefused')
    return new BadRequest(`${param}: ${e.name === 'EgressRefused' ? e.message : e.cause?.message}`);
  const timedOut =
    e?.name === 'TimeoutError' ||
    e?.name === 'AbortError' ||
    e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e?.code === 'UND_ERR_BODY_TIMEOUT';
  if (timedOut)
    return new BadRequest(
      `${param}: ${url} did not answer in full within ${timeoutMs} ms (ORRERY_MEDIA_FETCH_TIMEOUT); give a faster URL or the bytes`,
    );
  return new BadRequest(`${param}: ${url} could not be fetched (${e?.message ?? String(err)})`);
}
