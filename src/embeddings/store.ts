/**
 * SQL of the `vectors` table (0006, 0007). Every query starts from the caller's project (style D5);
 * vectors go in and come out as Float32Array (the encoding lives in vectors.ts).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import type { EmbeddingType, OwnerKind } from './embedder.ts';
import { decodeVector, encodeVector } from './vectors.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

export type Db = Kysely<Database>;

export interface VectorRow {
  ownerKind: OwnerKind;
  ownerId: string;
  type: EmbeddingType;
  model: string;
  /** The source stamp: a hash of the source the vector describes (sources.ts). */
  etag: string;
  /** The etag a caller gave with a vector it set (answered instead of the stamp); null when computed. */
  callerEtag?: string | null;
  vector: Float32Array;
}

/** Which index a vector belongs to: the same project, kind of owner, type and model. */
export interface PartitionKey {
  scope: Scope;
  kind: OwnerKind;
  type: EmbeddingType;
  model: string;
}

export const partitionId = (k: PartitionKey) => `${k.scope.project}|${k.kind}|${k.type}|${k.model}`;

const vectorsIn = (db: Db, s: Scope) =>
  db.selectFrom('vectors').where('vectors.account_id', '=', s.account).where('vectors.project_id', '=', s.project);

/** Bound parameters per statement stay far below both databases' limits (style I2). */
const ROWS_PER_INSERT = 200;

/**
 * Inserts or replaces vectors; answers the rows written. With `keepSameSource` (the automatic
 * embedder) a stored row of the same model and source stamp is left as it is, in the same
 * statement: it already describes that source, and may be a vector the caller set, which a
 * computation that raced with it must not replace.
 */
export async function upsertVectors(
  db: Db,
  s: Scope,
  rows: readonly VectorRow[],
  opts: { keepSameSource?: boolean } = {},
): Promise<readonly VectorRow[]> {
  const now = nowIso();
  const written: VectorRow[] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const batch = rows.slice(i, i + ROWS_PER_INSERT);
    const values = batch.map((r) => ({
      account_id: s.account,
      project_id: s.project,
      owner_kind: r.ownerKind,
      owner_id: r.ownerId,
      type: r.type,
      model: r.model,
      dimensions: r.vector.length,
      etag: r.etag,
      caller_etag: r.callerEtag ?? null,
      vector: encodeVector(r.vector),
      created_at: now,
      updated_at: now,
    }));
    const insert = db
      .insertInto('vectors')
      .values(values)
      .onConflict((oc) => {
        const update = oc.columns(['project_id', 'owner_kind', 'owner_id', 'type']).doUpdateSet((eb) => ({
          model: eb.ref('excluded.model'),
          dimensions: eb.ref('excluded.dimensions'),
          etag: eb.ref('excluded.etag'),
          caller_etag: eb.ref('excluded.caller_etag'),
          vector: eb.ref('excluded.vector'),
          updated_at: eb.ref('excluded.updated_at'),
        }));
        return opts.keepSameSource
          ? update.where((eb) =>
              eb.or([
                eb('vectors.model', '<>', eb.ref('excluded.model')),
                eb('vectors.etag', '<>', eb.ref('excluded.etag')),
              ]),
            )
          : update;
      });
    if (!opts.keepSameSource) {
      // Every row is written: nothing to ask back.
      await insert.execute();
      written.push(...batch);
      continue;
    }
    const done = new Set(
      (await insert.returning(['owner_id', 'type']).execute()).map((r) => `${r.owner_id}|${r.type}`),
    );
    written.push(...batch.filter((r) => done.has(`${r.ownerId}|${r.type}`)));
  }
  return written;
}

/** What an owner has: type, model and source ETag of each vector (no vector bytes). */
export async function vectorStamps(
  db: Db,
  s: Scope,
  kind: OwnerKind,
  ownerId: string,
): Promise<Array<{ type: string; model: string; etag: string }>> {
  return vectorsIn(db, s)
    .select(['vectors.type', 'vectors.model', 'vectors.etag'])
    .where('vectors.owner_kind', '=', kind)
    .where('vectors.owner_id', '=', ownerId)
    .execute();
}

export async function getVector(
  db: Db,
  s: Scope,
  kind: OwnerKind,
  ownerId: string,
  type: EmbeddingType,
): Promise<VectorRow | undefined> {
  const r = await vectorsIn(db, s)
    .select(['vectors.owner_id', 'vectors.type', 'vectors.model', 'vectors.etag', 'vectors.vector'])
    .where('vectors.owner_kind', '=', kind)
    .where('vectors.owner_id', '=', ownerId)
    .where('vectors.type', '=', type)
    .executeTakeFirst();
  return (
    r && {
      ownerKind: kind,
      ownerId: r.owner_id,
      type: r.type as EmbeddingType,
      model: r.model,
      etag: r.etag,
      vector: decodeVector(r.vector),
    }
  );
}

/** Every vector of these owners (the `embeddings` field of a page of objects), in as few queries as the bind limit allows. */
export async function vectorsOf(db: Db, s: Scope, kind: OwnerKind, ownerIds: readonly string[]): Promise<VectorRow[]> {
  const out: VectorRow[] = [];
  const ids = [...new Set(ownerIds)];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await vectorsIn(db, s)
      .select([
        'vectors.owner_id',
        'vectors.type',
        'vectors.model',
        'vectors.etag',
        'vectors.caller_etag',
        'vectors.vector',
      ])
      .where('vectors.owner_kind', '=', kind)
      .where('vectors.owner_id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const r of rows) {
      out.push({
        ownerKind: kind,
        ownerId: r.owner_id,
        type: r.type as EmbeddingType,
        model: r.model,
        etag: r.etag,
        callerEtag: r.caller_etag,
        vector: decodeVector(r.vector),
      });
    }
  }
  return out;
}

export async function deleteVectors(
  db: Db,
  s: Scope,
  kind: OwnerKind,
  ownerId: string,
  types?: readonly string[],
): Promise<number> {
  let q = db
    .deleteFrom('vectors')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('owner_kind', '=', kind)
    .where('owner_id', '=', ownerId);
  if (types) q = q.where('type', 'in', types.length ? types : ['']);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** One page of a partition, in owner order after `after` (keyset paging). */
export async function partitionPage(
  db: Db,
  k: PartitionKey,
  after: string | null,
  limit: number,
): Promise<Array<{ ownerId: string; vector: Float32Array }>> {
  let q = vectorsIn(db, k.scope)
    .select(['vectors.owner_id', 'vectors.vector'])
    .where('vectors.owner_kind', '=', k.kind)
    .where('vectors.type', '=', k.type)
    .where('vectors.model', '=', k.model);
  if (after !== null) q = q.where('vectors.owner_id', '>', after);
  const rows = await q.orderBy('vectors.owner_id').limit(limit).execute();
  return rows.map((r) => ({ ownerId: r.owner_id, vector: decodeVector(r.vector) }));
}

/** The current vectors of these owners in a partition (absent: deleted, or now of another model). */
export async function partitionRows(
  db: Db,
  k: PartitionKey,
  ownerIds: readonly string[],
): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (let i = 0; i < ownerIds.length; i += 500) {
    const rows = await vectorsIn(db, k.scope)
      .select(['vectors.owner_id', 'vectors.vector'])
      .where('vectors.owner_kind', '=', k.kind)
      .where('vectors.type', '=', k.type)
      .where('vectors.model', '=', k.model)
      .where('vectors.owner_id', 'in', ownerIds.slice(i, i + 500))
      .execute();
    for (const r of rows) out.set(r.owner_id, decodeVector(r.vector));
  }
  return out;
}

export async function countPartition(db: Db, k: PartitionKey): Promise<number> {
  // By project alone (a project id names one project of one account, and the key comes from an
  // authorised scope): vectors_partition then answers the count by itself. With account_id, not in
  // that index, SQLite read every row and its vector: 859 against 74 ms at 1,000,000 vectors, on
  // the event loop, when a saved graph is loaded.
  const r = await db
    .selectFrom('vectors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('vectors.project_id', '=', k.scope.project)
    .where('vectors.owner_kind', '=', k.kind)
    .where('vectors.type', '=', k.type)
    .where('vectors.model', '=', k.model)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The models of a project's vectors of one kind and type, most used first. */
export async function modelsOf(db: Db, s: Scope, kind: OwnerKind, type: string): Promise<string[]> {
  const rows = await vectorsIn(db, s)
    .select(['vectors.model', (eb) => eb.fn.countAll<number>().as('n')])
    .where('vectors.owner_kind', '=', kind)
    .where('vectors.type', '=', type)
    .groupBy('vectors.model')
    .orderBy(sql`2`, 'desc')
    .execute();
  return rows.map((r) => r.model);
}

/**
 * A project's stored vectors, then the tombstones their deletion just wrote (a trigger): only that
 * project's saved graphs read them, and those go with it (pruneProject).
 */
export async function deleteProjectVectors(db: Db, s: ProjectScope): Promise<Record<string, number>> {
  const counts = await deleteProjectRows(db, ['vectors'], s);
  // Not in the typed schema: only the graph code (graph-sql.ts) reads the table.
  const r = await sql`DELETE FROM vector_tombstones WHERE project_id = ${s.project}`.execute(db);
  return { ...counts, vector_tombstones: Number(r.numAffectedRows ?? 0) };
}
