/** Invitation and password-reset links: a random secret shown once, stored only as a hash. */
import { createHash, randomBytes } from 'node:crypto';

export const newSecret = (): string => randomBytes(32).toString('base64url');

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** The secret rides in the fragment: browsers never send it, so no access log records it. */
export const linkUrl = (publicUrl: string, kind: 'invite' | 'reset', secret: string): string =>
  `${publicUrl}/${kind === 'invite' ? 'accept-invite' : 'reset-password'}#token=${secret}`;

/** A link secret as the caller sends it back: refused early when it cannot be one. */
export const looksLikeSecret = (s: unknown): s is string => typeof s === 'string' && /^[A-Za-z0-9_-]{43}$/.test(s);
