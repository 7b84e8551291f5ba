/**
 * Bulk operations on objects (POST /operations, the client's objects.delete([ids]), bulkUpdate
 * and bulkCreate): every payload checked first, the valid ones written in one transaction.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import { Value } from '@sinclair/typebox/value';
import { ObjectBody } from './schemas.ts';
import type { ClaimedBlob } from '../blobs/blob-service.ts';
import type { PreparedEmbeddings, StoredEmbeddings } from './embeddings-hook.ts';
import { patchOf, type ObjectPatch } from './input.ts';
import {
  deleteObject,
  detachChildren,
  getObject,
  getWholeObject,
  insertObject,
  objectExists,
  promoteHead,
  updateObject,
} from './store.ts';
import type { ContentSource, ObjectInput, ObjectRow } from './model.ts';
import type { ObjectServiceDeps } from './service.ts';
import { deletionEntry, nameOf, newEtag, newObjectRow, updateColumns, type ObjectWrites } from './writes.ts';
import { TimeSlice } from '../util/turns.ts';

/**
 * How long a bulk create works between two turns of the event loop: 1,000 objects
 * (MAX_BULK_OBJECTS) in one go held it for the whole request, so other requests waited; a count
 * of objects per turn is no bound either, since one object's cost varies with its size.
 */
const BULK_SLICE_MS = 10;

export class ObjectBulk {
  constructor(
    private readonly deps: ObjectServiceDeps,
    private readonly writes: ObjectWrites,
  ) {}

  private get db(): Kysely<Database> {
    return this.deps.db;
  }

  /**
   * Deletes the objects named, in one transaction; ids that name nothing in the project are
   * answered in `failed`. Files, renditions and embeddings go after commit, as for one delete.
   */
  async bulkDelete(p: Principal, ids: readonly string[]): Promise<BulkDeleteResult> {
    const s = scopeOf(p);
    const unique = [...new Set(ids)];
    // Rows are taken in id order, so that two concurrent bulk writes lock them in the same order.
    const ordered = [...unique].sort();
    const slice = new TimeSlice(BULK_SLICE_MS);
    const { deleted, purges } = await this.db.transaction().execute(async (trx) => {
      const deleted: string[] = [];
      const sources = new Set<string>();
      const headless = new Set<string>();
      for (const id of ordered) {
        await slice.yield();
        const row = await getObject(trx, this.deps.dialect, s, id);
        if (!row || (await deleteObject(trx, s, id)) === 0) continue;
        await this.deps.audit?.write(trx, p, { ...deletionEntry(row), details: { bulk: true } });
        deleted.push(id);
        if (row.content_source) sources.add(row.content_source);
        if (row.revision_head && row.revision_root) headless.add(row.revision_root);
      }
      for (const root of headless) await promoteHead(trx, s, root, newEtag());
      const version = { etag: newEtag(), updated_at: nowIso(), updated_by: actorOf(p) };
      for (const id of deleted) {
        await slice.yield();
        await detachChildren(trx, s, id, version);
      }
      const purges: string[] = [];
      for (const source of sources) {
        const key = await this.writes.releaseBlob(trx, s, source);
        if (key) purges.push(key);
      }
      return { deleted, purges };
    });
    for (const key of purges) this.writes.background(this.deps.blobs.purge(s, key), 'delete an unreferenced blob');
    for (const id of deleted) {
      await slice.yield();
      this.writes.deleted(s, id);
    }
    const gone = new Set(deleted);
    return {
      operation: 'delete',
      status: unique.length && !deleted.length ? 'failed' : 'completed',
      deleted: deleted.length,
      failed: unique.filter((id) => !gone.has(id)),
    };
  }

  /**
   * Updates each object with its payload (the given fields only, as `PUT /objects/:id`). Every
   * payload is checked first; those that are invalid, or name no object of the project, are
   * answered in `failed` and the others are written in one transaction: all of them or, when
   * that transaction fails, none (then every id is in `failed`).
   */
  async bulkUpdate(p: Principal, updates: Record<string, unknown>): Promise<BulkUpdateResult> {
    const s = scopeOf(p);
    const failed: string[] = [];
    const prepared: { id: string; patch: ObjectPatch; vectors?: PreparedEmbeddings; claimed?: ClaimedBlob }[] = [];
    const slice = new TimeSlice(BULK_SLICE_MS);
    for (const [id, input] of Object.entries(updates)) {
      await slice.yield();
      try {
        const body = checkedPayload(input);
        if (!(await objectExists(this.db, s, id))) throw new NotFound('object', id);
        const patch = await patchOf(body, { ...this.writes.inputContext(p), selfId: id }, 'update');
        prepared.push({ id, patch, vectors: await this.writes.prepareEmbeddings(s, body) });
      } catch (err) {
        if (!isClientError(err)) throw err;
        failed.push(id);
      }
    }
    prepared.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const shared = new Map<string, ClaimedBlob>();
    type Written = {
      id: string;
      current: ObjectRow;
      next: ObjectRow;
      patch: ObjectPatch;
      vectors?: PreparedEmbeddings;
      purge?: string;
      stored?: StoredEmbeddings;
    };
    let written: Written[];
    try {
      for (const item of prepared) item.claimed = await this.writes.claimContent(p, s, item.id, item.patch, shared);
      written = await this.db.transaction().execute(async (trx) => {
        const out: Written[] = [];
        for (const item of prepared) {
          await slice.yield();
          const current = await getWholeObject(trx, this.deps.dialect, s, item.id);
          if (!current) {
            failed.push(item.id);
            continue;
          }
          const columns = updateColumns(p, current, item.patch);
          const next: ObjectRow = { ...current, ...columns } as ObjectRow;
          const newSource = 'content_source' in columns ? (columns.content_source ?? null) : current.content_source;
          if (newSource && newSource !== current.content_source) await this.writes.holdBlob(trx, s, newSource);
          if (!(await updateObject(trx, this.deps.dialect, s, current.id, current.etag, columns))) {
            failed.push(item.id);
            continue;
          }
          out.push({
            id: item.id,
            current,
            next,
            patch: item.patch,
            vectors: item.vectors,
            stored: await this.writes.storeEmbeddings(trx, s, next, item.vectors),
          });
        }
        // A file is forgotten only once no object of the batch points at it any more.
        for (const w of out) {
          const old = w.current.content_source;
          if (old && old !== w.next.content_source) w.purge = await this.writes.releaseBlob(trx, s, old);
        }
        return out;
      });
    } catch (err) {
      for (const item of prepared) this.writes.unclaim(s, item.claimed);
      if (!isClientError(err)) throw err;
      return { operation: 'update', status: 'failed', updated: 0, failed: Object.keys(updates) };
    }
    const done = new Set(written.map((w) => w.id));
    for (const item of prepared) if (!done.has(item.id)) this.writes.unclaim(s, item.claimed);
    for (const w of written) {
      await slice.yield();
      this.writes.embeddingsStored(s, w.stored);
      if ('content' in w.patch)
        this.writes.contentMoved(
          s,
          w.id,
          w.current.content as ContentSource | null,
          w.next.content as ContentSource | null,
          'updated',
          w.purge,
        );
      if (['text', 'name', 'description', 'properties', 'content'].some((k) => k in w.patch) || w.vectors)
        this.writes.embed(s, w.id);
    }
    return {
      operation: 'update',
      status: Object.keys(updates).length && !written.length ? 'failed' : 'completed',
      updated: written.length,
      failed,
    };
  }

  /**
   * Creates the objects (payloads as `POST /objects`, without `id`). Every payload is checked
   * first; the invalid ones are answered in `failed` with their index and the reason, and the
   * others are written in one transaction: all of them or, when that transaction fails, none.
   * Every pass (checks, writes, the jobs queued after commit) gives the event loop a turn every
   * BULK_SLICE_MS.
   */
  async bulkCreate(p: Principal, inputs: readonly unknown[]): Promise<BulkCreateResult> {
    const s = scopeOf(p);
    const failed: BulkCreateResult['failed'] = [];
    const prepared: { index: number; row: ObjectRow; vectors?: PreparedEmbeddings; claimed?: ClaimedBlob }[] = [];
    const externalIdOf = (input: unknown) => {
      const v = input && typeof input === 'object' ? (input as Record<string, unknown>).external_id : undefined;
      return typeof v === 'string' ? { external_id: v } : {};
    };
    const slice = new TimeSlice(BULK_SLICE_MS);
    for (const [index, input] of inputs.entries()) {
      await slice.yield();
      try {
        const body = checkedPayload(input);
        if (body.id !== undefined && body.id !== null && body.id !== '')
          throw new BadRequest(
            'id cannot be given in a bulk create: leave it out (update existing objects with bulkUpdate)',
          );
        const patch = await patchOf(body, this.writes.inputContext(p), 'create');
        const name = nameOf(patch, 'an object');
        const vectors = await this.writes.prepareEmbeddings(s, body);
        prepared.push({ index, row: newObjectRow(p, patch, name), vectors });
      } catch (err) {
        if (!isClientError(err)) throw err;
        failed.push({ index, ...externalIdOf(input), error: (err as Error).message });
      }
    }
    const shared = new Map<string, ClaimedBlob>();
    let stored: (StoredEmbeddings | undefined)[];
    try {
      for (const item of prepared) {
        await slice.yield();
        item.claimed = await this.writes.claimContent(p, s, item.row.id, item.row as ObjectPatch, shared);
      }
      stored = await this.db.transaction().execute(async (trx) => {
        const out: (StoredEmbeddings | undefined)[] = [];
        for (const item of prepared) {
          // Still one transaction (all or nothing): other requests run meanwhile, their writes wait for its end.
          await slice.yield();
          await this.writes.holdBlob(trx, s, item.row.content_source);
          await insertObject(trx, this.deps.dialect, item.row);
          out.push(await this.writes.storeEmbeddings(trx, s, item.row, item.vectors));
        }
        return out;
      });
    } catch (err) {
      for (const item of prepared) this.writes.unclaim(s, item.claimed);
      if (!isClientError(err)) throw err;
      const reason = (err as Error).message;
      return {
        operation: 'create',
        status: 'failed',
        created: 0,
        objects: [],
        failed: inputs.map(
          (input, index) =>
            failed.find((f) => f.index === index) ?? {
              index,
              ...externalIdOf(input),
              error: `nothing was written: ${reason}`,
            },
        ),
      };
    }
    for (const [i, item] of prepared.entries()) {
      await slice.yield();
      this.writes.created(s, item.row, stored[i]);
    }
    return {
      operation: 'create',
      status: inputs.length && !prepared.length ? 'failed' : 'completed',
      created: prepared.length,
      objects: prepared.map((item) => ({
        id: item.row.id,
        index: item.index,
        ...(item.row.external_id ? { external_id: item.row.external_id } : {}),
      })),
      failed,
    };
  }
}

export interface BulkDeleteResult {
  operation: 'delete';
  status: 'completed' | 'failed';
  deleted: number;
  failed: string[];
}
export interface BulkUpdateResult {
  operation: 'update';
  status: 'completed' | 'failed';
  updated: number;
  failed: string[];
}
export interface BulkCreateResult {
  operation: 'create';
  status: 'completed' | 'failed';
  created: number;
  objects: { id: string; index: number; external_id?: string }[];
  failed: { index: number; external_id?: string; error: string }[];
}

const isClientError = (err: unknown): boolean => err instanceof OrreryError && err.status >= 400 && err.status < 500;

/** One payload of a bulk operation, checked against the schema of `POST /objects`. */
function checkedPayload(input: unknown): ObjectInput {
  if (!Value.Check(ObjectBody, input)) {
    const first = Value.Errors(ObjectBody, input).First();
    throw new BadRequest(
      first && first.path
        ? `${first.path.slice(1).replace(/\//g, '.')}: ${first.message}`
        : 'each payload must be a JSON object like the body of POST /objects',
    );
  }
  return input as ObjectInput;
}
