/**
 * Short-lived access tokens that a provider issues in exchange for a long-lived credential
 * (watsonx's IAM token for an API key, Google's OAuth token for a service account). One exchange
 * serves every run until a minute before the token expires; runs that arrive while an exchange
 * is under way wait for it instead of starting their own. A failed exchange is not cached.
 */
import { createHash } from 'node:crypto';

export interface IssuedToken {
  token: string;
  /** Seconds the token lives, as the issuer said. */
  expiresInS: number;
}

/** Refresh this long before the issuer's expiry, so no request leaves with a token about to lapse. */
const MARGIN_MS = 60_000;
/** Bounds the cache when many credentials pass through one process. */
const MAX_ENTRIES = 1_000;

export class TokenCache {
  private readonly tokens = new Map<string, { token: string; expiresAt: number }>();
  private readonly pending = new Map<string, Promise<string>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The token for `credential` (hashed, never kept as given), from `issue` when none is fresh. */
  async get(credential: string, issue: () => Promise<IssuedToken>): Promise<string> {
    const key = createHash('sha256').update(credential).digest('hex');
    const cached = this.tokens.get(key);
    if (cached && cached.expiresAt - MARGIN_MS > this.now()) return cached.token;
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const exchange = issue()
      .then(({ token, expiresInS }) => {
        if (this.tokens.size >= MAX_ENTRIES) this.tokens.delete(this.tokens.keys().next().value!);
        this.tokens.set(key, { token, expiresAt: this.now() + Math.max(0, expiresInS) * 1000 });
        return token;
      })
      .finally(() => this.pending.delete(key));
    this.pending.set(key, exchange);
    return exchange;
  }

  /** Forget a credential's token (the provider refused it: it may have been revoked). */
  drop(credential: string): void {
    this.tokens.delete(createHash('sha256').update(credential).digest('hex'));
  }
}
