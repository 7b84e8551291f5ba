/**
 * One typed configuration, read from environment variables (and CLI flags, which override them).
 * Every variable is documented in README.md and .env.example.
 */
import { resolve } from 'node:path';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Absolute base of every URL the server hands out, without a trailing slash. */
  publicUrl: string;
  /** An `sk-…` key for the default project instead of a generated one. */
  adminKey?: string;
  /** Signing and encryption secret; when unset it is generated and kept (data folder or database). */
  secret?: string;
  /** `postgres://…` selects PostgreSQL; unset means SQLite under the data folder. */
  databaseUrl?: string;
  /** Lifetime of JWTs issued at /token/issue, in seconds. */
  jwtTtlSeconds: number;
  /** A run created with stream:true and never streamed fails after this many seconds. */
  streamTimeoutSeconds: number;
  logLevel: string;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function nonEmpty(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? int(env, 'ORRERY_PORT', 8080, 0, 65535);
  const host = overrides.host ?? nonEmpty(env, 'ORRERY_HOST') ?? '127.0.0.1';
  const dataDir = resolve(overrides.dataDir ?? nonEmpty(env, 'ORRERY_DATA_DIR') ?? './data');
  const adminKey = overrides.adminKey ?? nonEmpty(env, 'ORRERY_ADMIN_KEY');
  if (adminKey !== undefined && !/^sk-[A-Za-z0-9_-]{16,}$/.test(adminKey)) {
    throw new Error('ORRERY_ADMIN_KEY must look like "sk-" followed by at least 16 letters, digits, "-" or "_"');
  }
  const publicUrl = overrides.publicUrl ?? nonEmpty(env, 'ORRERY_PUBLIC_URL') ?? defaultPublicUrl(host, port);
  const config: Config = {
    port,
    host,
    dataDir,
    publicUrl: normalisePublicUrl(publicUrl),
    adminKey,
    secret: overrides.secret ?? nonEmpty(env, 'ORRERY_SECRET'),
    databaseUrl: overrides.databaseUrl ?? nonEmpty(env, 'ORRERY_DATABASE_URL'),
    jwtTtlSeconds: overrides.jwtTtlSeconds ?? int(env, 'ORRERY_JWT_TTL', 3600, 60, 30 * 24 * 3600),
    streamTimeoutSeconds: overrides.streamTimeoutSeconds ?? int(env, 'ORRERY_STREAM_TIMEOUT', 3600, 1),
    logLevel: overrides.logLevel ?? nonEmpty(env, 'ORRERY_LOG_LEVEL') ?? 'info',
  };
  if (config.secret !== undefined && config.secret.length < 16) {
    throw new Error('ORRERY_SECRET must be at least 16 characters long');
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new Error('ORRERY_DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  return config;
}

function defaultPublicUrl(host: string, port: number): string {
  // 0.0.0.0 and :: are listen addresses, not addresses a client can reach.
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const hostPart = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `http://${hostPart}:${port}`;
}

function normalisePublicUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`ORRERY_PUBLIC_URL must be an absolute URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('ORRERY_PUBLIC_URL must use http or https');
  return url.toString().replace(/\/+$/, '');
}
