/**
 * Project-scoped CRUD for the simple tables (environments, prompts, interactions): every query
 * starts from the caller's account and project (style D5), so another project's row is never seen.
 * JSON columns are encoded here on the way in and decoded on the way out, so services only ever
 * hold plain values (SQLite keeps JSON as text, PostgreSQL as jsonb).
 */
import type { Kysely, Selectable, Insertable, Updateable } from 'kysely';
import type { Database } from './schema.ts';
import type { OrreryDialect } from './dialect.ts';
import type { Principal, Scope } from '../auth/principal.ts';
// Types only: the log itself is passed in (TableAudit), so db/ runs no feature's code.
import type { AuditAction, AuditLog } from '../audit/log.ts';

type ScopedName = 'environments' | 'prompts' | 'interactions';

/** Writes of a table that are recorded in the audit trail, and how its rows are shown there. */
export interface TableAudit {
  log: AuditLog;
  /** `resource_type` of the events: environment, prompt, interaction. */
  resourceType: string;
  /** The fields of a row the trail shows (by default every column). */
  view?: (row: Record<string, unknown>) => Record<string, unknown>;
  /** Fields shown only as changed, never their value. */
  secret?: readonly string[];
}

export class ScopedTable<N extends ScopedName> {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    readonly table: N,
    private readonly jsonColumns: readonly string[],
    private readonly audit?: TableAudit,
  ) {}

  // Kysely cannot follow a generic table name through its builders; the public signatures are typed.
  private get any(): any {
    return this.db;
  }

  /** Rows of the scope chosen by `build` (filters, order, paging), decoded. */
  async select(s: Scope, build: (q: any) => any = (q) => q): Promise<Selectable<Database[N]>[]> {
    return this.selectWith(this.db, s, build);
  }

  async get(s: Scope, id: string): Promise<Selectable<Database[N]> | undefined> {
    const [row] = await this.select(s, (q) => q.where('id', '=', id));
    return row;
  }

  async getMany(s: Scope, ids: readonly string[]): Promise<Selectable<Database[N]>[]> {
    if (!ids.length) return [];
    return this.select(s, (q) => q.where('id', 'in', ids));
  }

  /** With `by`, the insert and its audit row (`action`, create by default) commit together. */
  async insert(row: Insertable<Database[N]>, by?: Principal, action: AuditAction = 'create'): Promise<void> {
    await this.audited(by, async (db) => {
      await (db as any).insertInto(this.table).values(this.encode(row)).execute();
      return {
        result: undefined,
        before: null,
        after: row as Record<string, unknown>,
        id: String((row as Record<string, unknown>).id),
        action,
      };
    });
  }

  /** Returns false when no row of the scope has that id (or `where` does not hold). With `by`, audited. */
  async update(
    s: Scope,
    id: string,
    patch: Updateable<Database[N]>,
    where?: { column: string; value: unknown },
    by?: Principal,
  ): Promise<boolean> {
    return this.audited(by, async (db) => {
      const before = by
        ? ((await this.selectWith(db, s, (q) => q.where('id', '=', id)))[0] as Record<string, unknown> | undefined)
        : undefined;
      let q = (db as any)
        .updateTable(this.table)
        .set(this.encode(patch))
        .where('account_id', '=', s.account)
        .where('project_id', '=', s.project)
        .where('id', '=', id);
      if (where) q = q.where(where.column, '=', where.value);
      const r = await q.executeTakeFirst();
      const ok = Number(r.numUpdatedRows) > 0;
      return {
        result: ok,
        before: before ?? null,
        after: ok && before ? { ...before, ...(patch as Record<string, unknown>) } : null,
        id,
        action: ok ? ('update' as const) : null,
      };
    });
  }

  /** With `by`, each deleted row is audited (with what it held) in the same transaction. */
  async delete(s: Scope, ids: readonly string[], by?: Principal): Promise<number> {
    if (!ids.length) return 0;
    if (by && this.audit) {
      const audit = this.audit;
      return this.db.transaction().execute(async (trx) => {
        const rows = await this.selectWith(trx, s, (q) => q.where('id', 'in', ids));
        const n = await this.deleteWith(trx, s, ids);
        for (const row of rows) {
          await audit.log.write(trx, by, {
            action: 'delete',
            resourceType: audit.resourceType,
            resourceId: String(row.id),
            changes: audit.log.changes(this.view(row), null, { secret: audit.secret }),
          });
        }
        return n;
      });
    }
    return this.deleteWith(this.db, s, ids);
  }

  private async deleteWith(db: Kysely<Database>, s: Scope, ids: readonly string[]): Promise<number> {
    const r = await (db as any)
      .deleteFrom(this.table)
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('id', 'in', ids)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  private async selectWith(db: Kysely<Database>, s: Scope, build: (q: any) => any): Promise<any[]> {
    const base = (db as any)
      .selectFrom(this.table)
      .selectAll()
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project);
    const rows = await build(base).execute();
    return rows.map((r: Record<string, unknown>) => this.decode(r));
  }

  /** Runs a write, in a transaction with its audit row when `by` is given and the table is audited. */
  private async audited<T>(
    by: Principal | undefined,
    write: (db: Kysely<Database>) => Promise<{
      result: T;
      before: Record<string, unknown> | null;
      after: Record<string, unknown> | null;
      id: string;
      action: AuditAction | null;
    }>,
  ): Promise<T> {
    const audit = this.audit;
    if (!by || !audit) return (await write(this.db)).result;
    return audit.log.record(by, async (trx) => {
      const w = await write(trx);
      const changes = audit.log.changes(w.before && this.view(w.before), w.after && this.view(w.after), {
        secret: audit.secret,
      });
      const entry =
        w.action && (w.action !== 'update' || Object.keys(changes).length)
          ? { action: w.action, resourceType: audit.resourceType, resourceId: w.id, changes }
          : null;
      return { result: w.result, entry };
    });
  }

  private view(row: Record<string, unknown>): Record<string, unknown> {
    return this.audit?.view ? this.audit.view(row) : row;
  }

  private encode<T extends object>(row: T): T {
    const out = { ...row } as Record<string, unknown>;
    for (const c of this.jsonColumns) if (c in out) out[c] = this.dialect.toJson(out[c]);
    return out as T;
  }

  private decode<T>(row: Record<string, unknown>): T {
    const out: Record<string, unknown> = { ...row };
    for (const c of this.jsonColumns) if (c in out) out[c] = this.dialect.fromJson(out[c]);
    return out as T;
  }
}
