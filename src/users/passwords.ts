/**
 * Password hashing: scrypt (node:crypto), memory-hard, with the parameters stored beside each
 * hash so they can be raised later without breaking old hashes. Comparison is constant-time.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { BadRequest } from '../util/errors.ts';

/** N = 2^15, r = 8, p = 3: 32 MiB per hash, one of the settings OWASP's Password Storage Cheat Sheet lists as equal to its N = 2^17, p = 1 (SECURITY.md). */
const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LENGTH = 64;
const SALT_BYTES = 16;

const PASSWORD_MIN_LENGTH = 12;
/** Longer input would only make each hash cost more; nobody types more than this. */
export const PASSWORD_MAX_LENGTH = 256;

const derive = (password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const opts: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r };
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });

/** Refuses a password outside the bounds, saying which. */
export function checkPasswordRules(password: unknown): string {
  if (typeof password !== 'string') throw new BadRequest('password must be a string');
  if (password.length < PASSWORD_MIN_LENGTH)
    throw new BadRequest(`password must be at least ${PASSWORD_MIN_LENGTH} characters long`);
  if (password.length > PASSWORD_MAX_LENGTH)
    throw new BadRequest(`password must be at most ${PASSWORD_MAX_LENGTH} characters long`);
  return password;
}

/** `scrypt$N$r$p$<salt b64url>$<hash b64url>` */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash of nothing anyone knows: unknown users cost the same time as known ones. */
let decoy: Promise<string> | undefined;

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const target = stored ?? (await (decoy ??= hashPassword(randomBytes(16).toString('hex'))));
  const parts = target.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64url');
  const key = await derive(password, Buffer.from(parts[4], 'base64url'), { N, r, p });
  return stored !== null && key.length === expected.length && timingSafeEqual(key, expected);
}
