/**
 * The server secret signs JWTs and URLs and encrypts provider keys. From ORRERY_SECRET when set;
 * otherwise generated once and kept: in the data folder where one process owns the database
 * (SQLite), in the database otherwise (so replicas that share the database share the secret;
 * decisions.md, Scale-out).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';

export interface SecretKeys {
  jwt: Uint8Array;
  urls: Buffer;
  encryption: Buffer;
}

export async function resolveSecret(
  opts: { secret?: string; dataDir: string },
  db: Kysely<Database>,
  dialect: OrreryDialect,
): Promise<string> {
  if (opts.secret) return opts.secret;
  if (dialect.caps.keepsSecretInFile) {
    mkdirSync(opts.dataDir, { recursive: true });
    const file = join(opts.dataDir, 'secret');
    if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
    return readFileSync(file, 'utf8').trim();
  }
  // First replica wins; the others read what it stored.
  await db
    .insertInto('settings')
    .values({ key: 'secret', value: randomBytes(32).toString('base64url') })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const row = await db.selectFrom('settings').select('value').where('key', '=', 'secret').executeTakeFirstOrThrow();
  return row.value;
}

const derive = (secret: string, purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'orrery', purpose, 32));

export function deriveKeys(secret: string): SecretKeys {
  return {
    jwt: new Uint8Array(derive(secret, 'jwt')),
    urls: derive(secret, 'signed-urls'),
    encryption: derive(secret, 'encryption'),
  };
}

/** AES-256-GCM; the output is `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export function encrypt(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(
    '.',
  );
}

export function decrypt(key: Buffer, sealed: string): string {
  const [version, iv, tag, body] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised encrypted value');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}
