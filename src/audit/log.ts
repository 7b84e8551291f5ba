/**
 * Writing the audit trail (issue 18): who changed what, when, from where, with the fields that
 * changed (before and after, secrets redacted). A change and its audit row commit together:
 * services call `record` with the write to do, which runs it in a transaction and adds the row
 * there, or `write` inside a transaction of their own.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { Principal } from '../auth/principal.ts';

export type AuditAction = 'create' | 'update' | 'delete' | 'bulk_delete' | 'publish' | 'token_issue';
type AuditCategory = 'content' | 'security' | 'system';

export interface AuditEntry {
  action: AuditAction;
  resourceType: string;
  resourceId: string;
  /** The project the resource belongs to (by default the caller's). */
  projectId?: string | null;
  category?: AuditCategory;
  /** Changed fields: `{field: {before?, after?}}` (see changesOf). */
  changes?: Record<string, { before?: unknown; after?: unknown }>;
  details?: Record<string, unknown>;
}

/** What a redacted secret reads as. */
const REDACTED = '[redacted]';

const SECURITY_TYPES = new Set(['apikey', 'project', 'token']);
const SYSTEM_ACTORS = new Set(['system', 'cli']);

export class AuditLog {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
  ) {}

  /** Runs `work` in a transaction and writes the entry it answers there (none: nothing is audited). */
  async record<T>(
    p: Principal,
    work: (trx: Kysely<Database>) => Promise<{ result: T; entry: AuditEntry | null }>,
  ): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      const { result, entry } = await work(trx);
      if (entry) await this.write(trx, p, entry);
      return result;
    });
  }

  /** changesOf() below, for callers under db/ that hold the log but import no feature's code. */
  changes(
    before: Record<string, unknown> | null,
    after: Record<string, unknown> | null,
    opts?: { secret?: readonly string[]; ignore?: readonly string[] },
  ): Record<string, { before?: unknown; after?: unknown }> {
    return changesOf(before, after, opts);
  }

  /** Writes one entry with the caller's executor (a transaction of the caller's). */
  async write(db: Kysely<Database>, p: Principal, entry: AuditEntry): Promise<void> {
    const details = {
      ...(entry.details ?? {}),
      // Who, by name: a user id alone says nothing once the user is gone.
      ...(p.user ? { actor: { id: `user:${p.user.id}`, email: p.user.email, name: p.user.name } } : {}),
      ...(entry.changes && Object.keys(entry.changes).length ? { changes: entry.changes } : {}),
    };
    await db
      .insertInto('audit_events')
      .values({
        id: newId(),
        account_id: p.account.id,
        project_id: entry.projectId === undefined ? p.project.id : entry.projectId,
        action: entry.action,
        resource_type: entry.resourceType,
        resource_id: entry.resourceId,
        event_category: entry.category ?? (SECURITY_TYPES.has(entry.resourceType) ? 'security' : 'content'),
        // The server's own work (retention) and the host's `orrery` command are not keys.
        principal_type: p.user ? 'user' : SYSTEM_ACTORS.has(p.keyId) ? p.keyId : 'apikey',
        principal_id: p.user ? `user:${p.user.id}` : SYSTEM_ACTORS.has(p.keyId) ? p.keyId : `apikey:${p.keyId}`,
        role: p.role,
        request_id: p.requestId ?? null,
        ip: p.ip ?? null,
        details: Object.keys(details).length ? this.dialect.toJson(details) : null,
        created_at: nowIso(),
      })
      .execute();
  }
}

/**
 * Runs `work` with its audit entry in one transaction when there is an audit trail (`log`), or
 * on `db` alone when there is none (tools that run without one).
 */
export async function auditedWrite<T>(
  log: AuditLog | undefined,
  db: Kysely<Database>,
  p: Principal,
  entry: AuditEntry,
  work: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  if (!log) return work(db);
  return log.record(p, async (trx) => ({ result: await work(trx), entry }));
}

/**
 * The fields of `after` that differ from `before` (by JSON value), as `{field: {before, after}}`;
 * `secret` fields show only that they changed. Bookkeeping fields are left out.
 */
export function changesOf(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
  opts: { secret?: readonly string[]; ignore?: readonly string[] } = {},
): Record<string, { before?: unknown; after?: unknown }> {
  const ignore = new Set([
    'updated_at',
    'updated_by',
    'created_at',
    'created_by',
    'account_id',
    'project_id',
    'etag',
    ...(opts.ignore ?? []),
  ]);
  const secret = new Set(opts.secret ?? []);
  const out: Record<string, { before?: unknown; after?: unknown }> = {};
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const k of keys) {
    if (ignore.has(k)) continue;
    const b = before?.[k];
    const a = after?.[k];
    if (JSON.stringify(b ?? null) === JSON.stringify(a ?? null)) continue;
    const shown = (v: unknown) => (v === undefined || v === null ? (v ?? null) : secret.has(k) ? REDACTED : v);
    Object.defineProperty(out, k, {
      value: { ...(before ? { before: shown(b) } : {}), ...(after ? { after: shown(a) } : {}) },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
