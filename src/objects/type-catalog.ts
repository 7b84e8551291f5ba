/**
 * The official client's `types.find` and `types.catalog` (issue 24). The catalog here is the
 * project's stored object types only: Orrery has no system or app types, so `list` and `stored`
 * answer the same entries and `resolve` finds a stored type by id or by name.
 */
import { sql, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { jsonSql, type JsonSql } from '../db/json-sql.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import { pageOf } from '../http/query.ts';
import { compileFind, FindQueryError, type FieldRef } from '../query/find/index.ts';
import { parseSelect, project } from './projection.ts';
import { toDto, type ObjectTypeDto, type ObjectTypeRow } from './types-service.ts';
import { table } from '../util/own.ts';

const text = (column: string): FieldRef => ({ kind: 'column', column: `object_types.${column}`, type: 'text' });

const COLUMNS: Record<string, FieldRef> = table({
  id: text('id'),
  name: text('name'),
  description: text('description'),
  created_by: text('created_by'),
  updated_by: text('updated_by'),
  created_at: text('created_at'),
  updated_at: text('updated_at'),
  edit_revision: { kind: 'column', column: 'object_types.edit_revision', type: 'number' },
});
/** Fields kept in the type's JSON document. */
const DOC_FIELDS = [
  'tags',
  'status',
  'is_chunkable',
  'strict_mode',
  'object_schema',
  'table_layout',
  'intake',
  'editing',
];
const TYPE_FIND_FIELDS = [...Object.keys(COLUMNS), ...DOC_FIELDS.map((f) => `${f}(.*)`)];

function resolveTypeField(path: string[]): FieldRef | null {
  if (!path.length) return null;
  const direct = COLUMNS[path.join('.')];
  if (direct) return direct;
  if (!DOC_FIELDS.includes(path[0])) return null;
  return { kind: 'json', column: 'object_types.doc', path };
}

export interface TypeFindInput {
  query?: unknown;
  limit?: number;
  offset?: number;
  select?: string;
}

export interface CatalogQuery {
  tag?: string;
  limit?: number;
  offset?: number;
  layout?: boolean;
  schema?: boolean;
}

export class TypeCatalog {
  private readonly json: JsonSql;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
  ) {
    this.json = jsonSql(dialect.name);
  }

  /** `POST /types/find`: a Mongo-style query on type fields; whole types (select narrows them). */
  async find(p: Principal, input: TypeFindInput): Promise<Array<{ id: string } & Partial<ObjectTypeDto>>> {
    const match = input.query ?? {};
    if (match === null || typeof match !== 'object' || Array.isArray(match)) {
      throw new BadRequest(
        'query must be an object of {field: condition}, e.g. {"name": "Invoice"} or {"tags": {"$in": ["finance"]}}',
      );
    }
    const rows = await this.query(p, match as Record<string, unknown>, pageOf(input));
    const projection = parseSelect(input.select);
    return rows.map(
      (r) =>
        project(toDto(r, { layout: true, schema: true }) as unknown as Record<string, unknown>, projection) as {
          id: string;
        } & Partial<ObjectTypeDto>,
    );
  }

  /** `GET /types/catalog` (and `/stored`): the project's types by name, optionally those with a tag. */
  async list(p: Principal, q: CatalogQuery): Promise<ObjectTypeDto[]> {
    const rows = await this.query(p, q.tag ? { tags: q.tag } : {}, pageOf(q, 1000));
    return rows.map((r) => toDto(r, { layout: q.layout, schema: q.schema }));
  }

  /** `GET /types/catalog/resolve/:type`: a type of the project by id, else by exact name. */
  async resolve(p: Principal, idOrName: string): Promise<ObjectTypeDto> {
    const s = scopeOf(p);
    const r = await this.db
      .selectFrom('object_types')
      .selectAll()
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
      .orderBy((eb) => eb.case().when('id', '=', idOrName).then(0).else(1).end())
      .executeTakeFirst();
    if (!r) throw new NotFound('object type', idOrName);
    return toDto({ ...r, doc: this.dialect.fromJson(r.doc) ?? {} } as ObjectTypeRow, { layout: true, schema: true });
  }

  private async query(
    p: Principal,
    match: Record<string, unknown>,
    page: { limit: number; offset: number },
  ): Promise<ObjectTypeRow[]> {
    const s = scopeOf(p);
    let condition;
    try {
      condition = compileFind(match, resolveTypeField, this.json, TYPE_FIND_FIELDS);
    } catch (err) {
      if (err instanceof FindQueryError)
        throw new OrreryError(err.code, err.status, err.message, err.at ? { at: err.at } : undefined);
      throw err;
    }
    const rows = await this.db
      .selectFrom('object_types')
      .selectAll()
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where(sql<SqlBool>`(${condition})`)
      .orderBy('name')
      .orderBy('id')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return rows.map((r) => ({ ...r, doc: this.dialect.fromJson(r.doc) ?? {} }) as ObjectTypeRow);
  }
}
