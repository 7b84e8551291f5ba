/** Token verification rules that no HTTP path can produce: a token must be ours, for us, and expire. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { JWT_AUDIENCE, verifyToken } from '../../src/auth/jwt.ts';

const key = new Uint8Array(randomBytes(32));
const claims = { key_id: 'k1', account: { id: 'a1', name: 'A' }, project: { id: 'p1', name: 'P' } };
const sign = (build: (t: SignJWT) => SignJWT, k = key) =>
  build(new SignJWT(claims).setProtectedHeader({ alg: 'HS256' })).sign(k);

describe('JWT verification', () => {
  it('accepts a token signed with the key, for our audience, with an expiry', async () => {
    const t = await sign((j) => j.setAudience(JWT_AUDIENCE).setExpirationTime('1h'));
    assert.equal((await verifyToken(key, t)).ok, true);
  });

  it('refuses a token without exp, for another audience, expired, or signed with another key', async () => {
    const cases = [
      await sign((j) => j.setAudience(JWT_AUDIENCE)),
      await sign((j) => j.setAudience('someone-else').setExpirationTime('1h')),
      await sign((j) => j.setAudience(JWT_AUDIENCE).setExpirationTime(Math.floor(Date.now() / 1000) - 10)),
      await sign((j) => j.setAudience(JWT_AUDIENCE).setExpirationTime('1h'), new Uint8Array(randomBytes(32))),
    ];
    for (const t of cases) assert.equal((await verifyToken(key, t)).ok, false);
  });
});
