/**
 * Signed URLs for the blobs Orrery serves itself. The signature is an HMAC-SHA256 (key derived
 * from ORRERY_SECRET) over the method, the decoded path, the expiry and every other query
 * parameter (the size limit of an upload, the disposition of a download), so none of them can
 * be changed, and a URL signed for PUT does not work for GET. Compared in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Forbidden } from '../util/errors.ts';

export type SignedMethod = 'GET' | 'PUT';

const EXPIRES = 'expires';
const SIG = 'sig';

export type SignedParams = Record<string, string>;

export class UrlSigner {
  constructor(private readonly key: Buffer) {}

  /** The query string (without `?`) that authorises `method` on `path` until `expiresAt` (unix seconds). */
  sign(method: SignedMethod, path: string, expiresAt: number, params: SignedParams = {}): string {
    const all: SignedParams = { ...params, [EXPIRES]: String(expiresAt) };
    const query = Object.keys(all)
      .sort()
      .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(all[k])}`);
    query.push(`${SIG}=${this.mac(method, path, all)}`);
    return query.join('&');
  }

  /**
   * Checks a request against its signature. Answers the signed parameters (without `expires`
   * and `sig`), or throws a 403 that says whether the URL was altered, used with another
   * method, or has expired.
   */
  verify(method: SignedMethod, path: string, query: Record<string, unknown>, now = Date.now()): SignedParams {
    const params: SignedParams = {};
    for (const [k, v] of Object.entries(query)) {
      if (typeof v !== 'string') throw refuse('malformed', 'the signed URL has a repeated or empty query parameter');
      if (k !== SIG) params[k] = v;
    }
    const given = query[SIG];
    const expires = params[EXPIRES];
    if (typeof given !== 'string' || !given || expires === undefined) {
      throw refuse('unsigned', 'this URL is not signed: ask POST /api/v1/objects/upload-url or /download-url for one');
    }
    if (!this.matches(method, path, params, given)) {
      const other: SignedMethod = method === 'GET' ? 'PUT' : 'GET';
      if (this.matches(other, path, params, given)) {
        throw refuse('wrong_method', `this URL was signed for ${other}, not ${method}`);
      }
      throw refuse(
        'bad_signature',
        'the URL signature does not match: it was altered or signed by another server secret',
      );
    }
    const expiresAt = Number(expires);
    if (!Number.isInteger(expiresAt) || expiresAt * 1000 <= now) {
      throw refuse(
        'expired',
        `this URL expired at ${Number.isFinite(expiresAt) ? new Date(expiresAt * 1000).toISOString() : expires}; ask for a new one`,
      );
    }
    const { [EXPIRES]: _e, ...rest } = params;
    return rest;
  }

  private matches(method: SignedMethod, path: string, params: SignedParams, given: string): boolean {
    const expected = Buffer.from(this.mac(method, path, params));
    const actual = Buffer.from(given);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  private mac(method: SignedMethod, path: string, params: SignedParams): string {
    const canonical = [
      'orrery-url-v1',
      method,
      path,
      ...Object.keys(params)
        .sort()
        .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(params[k])}`),
    ].join('\n');
    return createHmac('sha256', this.key).update(canonical).digest('base64url');
  }
}

const refuse = (reason: string, message: string) => new Forbidden(message, { reason });
