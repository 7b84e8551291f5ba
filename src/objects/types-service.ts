/**
 * Object types: a name, an optional JSON schema of the properties and an optional
 * `table_layout` (the columns of a CSV export, decisions.md). Names are unique in a project.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, ObjectTypeTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import { countByType } from './store.ts';
import type { TypeRef } from './model.ts';
import { auditedWrite, changesOf, type AuditEntry, type AuditLog } from '../audit/log.ts';

export interface ColumnLayout {
  field: string;
  name: string;
  type?: string;
  fallback?: string;
  default?: unknown;
}

export interface ObjectTypeInput {
  name?: string;
  description?: string | null;
  tags?: string[];
  object_schema?: Record<string, unknown> | null;
  table_layout?: ColumnLayout[] | null;
  is_chunkable?: boolean;
  strict_mode?: boolean;
  status?: 'active' | 'draft';
  intake?: Record<string, unknown>;
  editing?: Record<string, unknown>;
  expected_edit_revision?: number;
}

export interface ObjectTypeDto {
  id: string;
  edit_revision: number;
  name: string;
  description?: string;
  tags: string[];
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
  status?: string;
  is_chunkable?: boolean;
  intake?: Record<string, unknown>;
  editing?: Record<string, unknown>;
  table_layout?: ColumnLayout[];
  object_schema?: Record<string, unknown>;
  strict_mode?: boolean;
}

/** Fields kept in the `doc` JSON column. */
const DOC_FIELDS = [
  'tags',
  'object_schema',
  'table_layout',
  'is_chunkable',
  'strict_mode',
  'status',
  'intake',
  'editing',
] as const;
type Doc = Partial<Pick<ObjectTypeDto, (typeof DOC_FIELDS)[number]>>;
export type ObjectTypeRow = Omit<Selectable<ObjectTypeTable>, 'doc'> & { doc: Doc };
type Row = ObjectTypeRow;

const UNIQUE_VIOLATION = new Set(['SQLITE_CONSTRAINT_UNIQUE', '23505']);

export class ObjectTypeService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    /** The audit trail: every change of a type, written with it. */
    private readonly audit?: AuditLog,
  ) {}

  private audited<T>(p: Principal, entry: AuditEntry, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
    return auditedWrite(this.audit, this.db, p, entry, work);
  }

  private typesIn(s: Scope) {
    return this.db
      .selectFrom('object_types')
      .selectAll()
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project);
  }

  private decode(r: Selectable<ObjectTypeTable>): Row {
    return { ...r, doc: this.dialect.fromJson<Doc>(r.doc) ?? {} };
  }

  async create(p: Principal, input: ObjectTypeInput): Promise<ObjectTypeDto> {
    const name = input.name?.trim();
    if (!name) throw new BadRequest('body must have property "name"');
    const now = nowIso();
    const row: Row = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      name,
      description: input.description ?? null,
      edit_revision: 1,
      doc: docOf({ tags: [] }, input),
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.audited(
        p,
        { action: 'create', resourceType: 'object_type', resourceId: row.id, changes: changesOf(null, typeView(row)) },
        (db) =>
          db
            .insertInto('object_types')
            .values({ ...row, doc: this.dialect.toJson(row.doc) })
            .execute(),
      );
    } catch (err) {
      throw this.translate(err, name);
    }
    return toDto(row, { layout: true, schema: true });
  }

  async list(
    p: Principal,
    q: { name?: string; limit: number; offset: number; layout?: boolean; schema?: boolean },
  ): Promise<ObjectTypeDto[]> {
    let query = this.typesIn(scopeOf(p));
    if (q.name) query = query.where('name', '=', q.name);
    const rows = await query.orderBy('name').orderBy('id').limit(q.limit).offset(q.offset).execute();
    return rows.map((r) => toDto(this.decode(r), q));
  }

  async get(p: Principal, id: string): Promise<ObjectTypeDto> {
    return toDto(await this.row(scopeOf(p), id), { layout: true, schema: true });
  }

  async getByName(p: Principal, name: string): Promise<ObjectTypeDto> {
    const r = await this.typesIn(scopeOf(p)).where('name', '=', name).executeTakeFirst();
    if (!r) throw new NotFound('object type', name);
    return toDto(this.decode(r), { layout: true, schema: true });
  }

  async update(p: Principal, id: string, input: ObjectTypeInput): Promise<ObjectTypeDto> {
    const s = scopeOf(p);
    const current = await this.row(s, id);
    if (input.expected_edit_revision !== undefined && input.expected_edit_revision !== current.edit_revision) {
      throw new Conflict(
        `object type ${id} is at edit_revision ${current.edit_revision}, not ${input.expected_edit_revision}: reload and retry`,
      );
    }
    const name = input.name === undefined ? current.name : input.name.trim();
    if (!name) throw new BadRequest('name must not be empty');
    const next: Row = {
      ...current,
      name,
      description: input.description === undefined ? current.description : input.description,
      doc: docOf(current.doc, input),
      edit_revision: current.edit_revision + 1,
      updated_by: actorOf(p),
      updated_at: nowIso(),
    };
    let r;
    try {
      r = await this.audited(
        p,
        {
          action: 'update',
          resourceType: 'object_type',
          resourceId: id,
          changes: changesOf(typeView(current), typeView(next)),
        },
        async (db) => {
          const done = await db
            .updateTable('object_types')
            .set({
              name: next.name,
              description: next.description,
              doc: this.dialect.toJson(next.doc),
              edit_revision: next.edit_revision,
              updated_by: next.updated_by,
              updated_at: next.updated_at,
            })
            .where('account_id', '=', s.account)
            .where('project_id', '=', s.project)
            .where('id', '=', id)
            .where('edit_revision', '=', current.edit_revision)
            .executeTakeFirst();
          // Nothing changed: no audit row either (the transaction is undone).
          if (Number(done.numUpdatedRows) === 0)
            throw new Conflict(`object type ${id} was changed meanwhile: reload and retry`);
          return done;
        },
      );
    } catch (err) {
      throw this.translate(err, name);
    }
    if (Number(r.numUpdatedRows) === 0) throw new Conflict(`object type ${id} was changed meanwhile: reload and retry`);
    return toDto(next, { layout: true, schema: true });
  }

  async delete(p: Principal, id: string): Promise<{ id: string }> {
    const s = scopeOf(p);
    const current = await this.row(s, id);
    const used = await countByType(this.db, s, id);
    if (used > 0)
      throw new Conflict(`object type ${id} is the type of ${used} object(s): change or delete them first`, {
        objects: used,
      });
    await this.audited(
      p,
      { action: 'delete', resourceType: 'object_type', resourceId: id, changes: changesOf(typeView(current), null) },
      (db) =>
        db
          .deleteFrom('object_types')
          .where('account_id', '=', s.account)
          .where('project_id', '=', s.project)
          .where('id', '=', id)
          .execute(),
    );
    return { id };
  }

  /** `{id, name}` of each given type id (for the `type` of object records). */
  async refs(s: Scope, ids: readonly string[]): Promise<Map<string, TypeRef>> {
    const out = new Map<string, TypeRef>();
    const unique = [...new Set(ids)];
    if (!unique.length) return out;
    const rows = await this.db
      .selectFrom('object_types')
      .select(['id', 'name'])
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('id', 'in', unique)
      .execute();
    for (const r of rows) out.set(r.id, { id: r.id, name: r.name, ref_type: 'stored' });
    return out;
  }

  /** The type named by an id, or else by its exact name; NotFound otherwise. */
  async resolve(s: Scope, idOrName: string): Promise<TypeRef> {
    const r = await this.db
      .selectFrom('object_types')
      .select(['id', 'name'])
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
      .orderBy((eb) => eb.case().when('id', '=', idOrName).then(0).else(1).end())
      .executeTakeFirst();
    if (!r) throw new NotFound('object type', idOrName);
    return { id: r.id, name: r.name, ref_type: 'stored' };
  }

  /** The table layout of a type (for exports); NotFound when the type does not exist. */
  async layoutOf(s: Scope, idOrName: string): Promise<ColumnLayout[] | undefined> {
    const ref = await this.resolve(s, idOrName);
    return (await this.row(s, ref.id)).doc.table_layout;
  }

  private async row(s: Scope, id: string): Promise<Row> {
    const r = await this.typesIn(s).where('id', '=', id).executeTakeFirst();
    if (!r) throw new NotFound('object type', id);
    return this.decode(r);
  }

  private translate(err: unknown, name: string): unknown {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && UNIQUE_VIOLATION.has(code)
      ? new Conflict(`an object type named ${JSON.stringify(name)} already exists in this project`)
      : err;
  }
}

function docOf(base: Doc, input: ObjectTypeInput): Doc {
  const doc: Doc = { ...base };
  for (const f of DOC_FIELDS) {
    if (input[f] === undefined) continue;
    if (input[f] === null) delete doc[f];
    else (doc as Record<string, unknown>)[f] = input[f];
  }
  if (doc.table_layout) checkLayout(doc.table_layout);
  return doc;
}

export function checkLayout(layout: unknown): asserts layout is ColumnLayout[] {
  if (!Array.isArray(layout)) throw new BadRequest('table_layout must be an array of {field, name}');
  layout.forEach((c, i) => {
    if (!c || typeof c !== 'object' || typeof c.field !== 'string' || !c.field || typeof c.name !== 'string') {
      throw new BadRequest(`table_layout[${i}] must be {field: string, name: string, type?, fallback?, default?}`);
    }
  });
}

export function toDto(r: ObjectTypeRow, opts: { layout?: boolean; schema?: boolean }): ObjectTypeDto {
  const d = r.doc;
  return {
    id: r.id,
    edit_revision: r.edit_revision,
    name: r.name,
    ...(r.description ? { description: r.description } : {}),
    tags: d.tags ?? [],
    created_by: r.created_by,
    updated_by: r.updated_by,
    created_at: r.created_at,
    updated_at: r.updated_at,
    ...(d.status ? { status: d.status } : {}),
    ...(d.is_chunkable !== undefined ? { is_chunkable: d.is_chunkable } : {}),
    ...(d.intake ? { intake: d.intake } : {}),
    ...(d.editing ? { editing: d.editing } : {}),
    ...(opts.layout && d.table_layout ? { table_layout: d.table_layout } : {}),
    ...(opts.schema && d.object_schema ? { object_schema: d.object_schema } : {}),
    ...(d.strict_mode !== undefined ? { strict_mode: d.strict_mode } : {}),
  };
}

/** What the audit trail shows of a type. */
const typeView = (row: Row): Record<string, unknown> => ({
  name: row.name,
  description: row.description,
  ...(row.doc as Record<string, unknown>),
});
