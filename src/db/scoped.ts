/**
 * Project-scoped CRUD for the simple tables (environments, prompts, interactions): every query
 * starts from the caller's account and project (style D5), so another project's row is never seen.
 * JSON columns are encoded here on the way in and decoded on the way out, so services only ever
 * hold plain values (SQLite keeps JSON as text, PostgreSQL as jsonb).
 */
import type { Kysely, Selectable, Insertable, Updateable } from 'kysely';
import type { Database } from './schema.ts';
import type { OrreryDialect } from './dialect.ts';
import type { Scope } from '../auth/principal.ts';

type ScopedName = 'environments' | 'prompts' | 'interactions';

export class ScopedTable<N extends ScopedName> {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    readonly table: N,
    private readonly jsonColumns: readonly string[],
  ) {}

  // Kysely cannot follow a generic table name through its builders; the public signatures are typed.
  private get any(): any {
    return this.db;
  }

  /** Rows of the scope chosen by `build` (filters, order, paging), decoded. */
  async select(s: Scope, build: (q: any) => any = (q) => q): Promise<Selectable<Database[N]>[]> {
    const base = this.any.selectFrom(this.table).selectAll().where('account_id', '=', s.account).where('project_id', '=', s.project);
    const rows = await build(base).execute();
    return rows.map((r: Record<string, unknown>) => this.decode(r));
  }

  async get(s: Scope, id: string): Promise<Selectable<Database[N]> | undefined> {
    const [row] = await this.select(s, (q) => q.where('id', '=', id));
    return row;
  }

  async getMany(s: Scope, ids: readonly string[]): Promise<Selectable<Database[N]>[]> {
    if (!ids.length) return [];
    return this.select(s, (q) => q.where('id', 'in', ids));
  }

  async insert(row: Insertable<Database[N]>): Promise<void> {
    await this.any.insertInto(this.table).values(this.encode(row)).execute();
  }

  /** Returns false when no row of the scope has that id (or `where` does not hold). */
  async update(s: Scope, id: string, patch: Updateable<Database[N]>, where?: { column: string; value: unknown }): Promise<boolean> {
    let q = this.any.updateTable(this.table).set(this.encode(patch)).where('account_id', '=', s.account).where('project_id', '=', s.project).where('id', '=', id);
    if (where) q = q.where(where.column, '=', where.value);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async delete(s: Scope, ids: readonly string[]): Promise<number> {
    if (!ids.length) return 0;
    const r = await this.any.deleteFrom(this.table).where('account_id', '=', s.account).where('project_id', '=', s.project).where('id', 'in', ids).executeTakeFirst();
    return Number(r.numDeletedRows);
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
