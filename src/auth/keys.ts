/** API key secrets: generated once, shown once, stored only as a hash (style I4). */
import { createHash, randomBytes } from 'node:crypto';

export const generateApiKey = (): string => `sk-${randomBytes(24).toString('base64url')}`;

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Enough of the key to recognise it in a listing, never enough to use it. */
export const keyHint = (secret: string): string => `sk-…${secret.slice(-4)}`;

export const looksLikeApiKey = (token: string): boolean => /^sk-[A-Za-z0-9_-]{16,}$/.test(token);
