/**
 * Providers sometimes echo the credentials they were sent in their error text ("Incorrect API key
 * provided: sk-…", a Basic header quoted back). That text becomes a run's stored `error`, which any
 * reader of the project sees, so the environment's own secret values are cut out of it first: the
 * exact values, and the encodings a key travels in (base64 at any byte offset, URL-encoding, JSON).
 */
import type { ProviderConnection } from './driver.ts';

const CENSOR = '[REDACTED]';
/** Shorter values (or encoded cores) would match ordinary text. */
const MIN_SECRET = 8;
/** Fields of a JSON key (a Vertex service account key file) that are credentials themselves. */
const JSON_SECRET_FIELDS = [
  'private_key',
  'private_key_id',
  'client_secret',
  'refresh_token',
  'secret_access_key',
  'session_token',
];

/** The secret values a connection holds: its key, the parts of an `ID:SECRET[:TOKEN]` key, a JSON key's secret fields. */
function connectionSecrets(conn: ProviderConnection | undefined): string[] {
  const key = conn?.api_key;
  if (!key) return [];
  const out = [key];
  let json: Record<string, unknown> | undefined;
  if (key.trimStart().startsWith('{')) {
    try {
      json = JSON.parse(key) as Record<string, unknown>;
    } catch {
      // not JSON after all: the key is taken as text below
    }
  }
  // A JSON key's secrets are its secret fields; its colons split URLs and fields, not secrets
  // (a part such as "//127.0.0.1" would cut an endpoint out of every message).
  if (json) {
    for (const f of JSON_SECRET_FIELDS) if (typeof json[f] === 'string') out.push(json[f] as string);
  } else {
    out.push(...key.split(':'));
  }
  return out.filter((s) => s.length >= MIN_SECRET);
}

/**
 * base64 of `value` as it reads inside a longer base64 text: for each of the three byte offsets
 * the value can start at, the characters that depend on its bytes alone.
 */
function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const head = offset === 0 ? 0 : 3 - offset;
    const whole = Math.floor((bytes.length - head) / 3) * 3;
    if (whole <= 0) continue;
    const core = padded.subarray(offset + head, offset + head + whole).toString('base64');
    cores.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return cores;
}

/** Every form of `secret` to cut out, longest first (so a form is not left half cut by a shorter one). */
function secretForms(secret: string): string[] {
  const forms = new Set([
    secret,
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    ...base64Cores(secret),
  ]);
  return [...forms].filter((f) => f.length >= MIN_SECRET).sort((a, b) => b.length - a.length);
}

/** `text` without any form of the connection's secrets. */
export function scrubConnectionSecrets(text: string, conn: ProviderConnection | undefined): string {
  let out = text;
  for (const secret of connectionSecrets(conn)) {
    for (const form of secretForms(secret)) if (out.includes(form)) out = out.split(form).join(CENSOR);
  }
  return out;
}
