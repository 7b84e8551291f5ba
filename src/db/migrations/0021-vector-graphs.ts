/**
 * 0021: persisted vector graphs (issue 20). Frozen (style K7).
 *
 * - `vectors.revision`: a number from one database-wide counter, set on every insert and update
 *   of a row by a trigger (so every write path is covered: upserts, deletes of objects and of
 *   projects, the retention sweeper). A saved HNSW graph records the highest revision it
 *   includes; on load, rows of a higher revision are replayed onto it.
 * - `vector_tombstones`: a row per vector deleted (or moved to another model: it left its old
 *   partition), written by a trigger with its own revision, so deletions replay too. Old
 *   tombstones are pruned; `vector_clock.tombstones_from` is the lowest revision whose tombstones
 *   are all still there, and a graph saved before it is rebuilt, not replayed.
 * - `vector_clock`: the counter on SQLite (`revision`; one writer at a time, so revisions are in
 *   commit order), and `tombstones_from` on both.
 * - PostgreSQL: the counter is the sequence `vector_revision_seq`. Sequence numbers are handed out
 *   in call order, not commit order, so every writer takes a shared transaction-level advisory
 *   lock first; a replica that reads "the highest revision" takes it exclusively for an instant,
 *   so that no transaction holding a lower number is still in flight (graph-sql.ts).
 * - `vector_graph_leases`: which replica builds the graph of a partition, until when (a crashed
 *   builder's lease expires).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

/** The advisory lock key of vector writers (any constant; graph-sql.ts uses the same). */
const LOCK = 7_020_021;

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .alterTable('vectors')
    .addColumn('revision', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('vectors_partition_revision')
    .on('vectors')
    .columns(['project_id', 'owner_kind', 'type', 'model', 'revision'])
    .execute();
  await db.schema
    .createTable('vector_tombstones')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('owner_kind', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('vector_tombstones_partition')
    .on('vector_tombstones')
    .columns(['project_id', 'owner_kind', 'type', 'model', 'revision'])
    .execute();
  await db.schema.createIndex('vector_tombstones_age').on('vector_tombstones').columns(['deleted_at']).execute();
  await db.schema
    .createTable('vector_clock')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('tombstones_from', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('vector_clock').values({ id: 1, revision: 0, tombstones_from: 0 }).execute();
  await db.schema
    .createTable('vector_graph_leases')
    .addColumn('partition_id', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();

  if (d === 'postgres') {
    await sql`CREATE SEQUENCE vector_revision_seq`.execute(db);
    await sql
      .raw(
        `
      CREATE FUNCTION vector_revision_next() RETURNS bigint LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(${LOCK});
        RETURN nextval('vector_revision_seq');
      END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `
      CREATE FUNCTION vectors_revision() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.model <> NEW.model THEN
          INSERT INTO vector_tombstones VALUES (OLD.project_id, OLD.owner_kind, OLD.type, OLD.model, OLD.owner_id,
            vector_revision_next(), to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
        END IF;
        NEW.revision := vector_revision_next();
        RETURN NEW;
      END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `
      CREATE FUNCTION vectors_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO vector_tombstones VALUES (OLD.project_id, OLD.owner_kind, OLD.type, OLD.model, OLD.owner_id,
          vector_revision_next(), to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
        RETURN OLD;
      END $$`,
      )
      .execute(db);
    await sql`CREATE TRIGGER vectors_revision BEFORE INSERT OR UPDATE ON vectors FOR EACH ROW EXECUTE FUNCTION vectors_revision()`.execute(
      db,
    );
    await sql`CREATE TRIGGER vectors_tombstone AFTER DELETE ON vectors FOR EACH ROW EXECUTE FUNCTION vectors_tombstone()`.execute(
      db,
    );
    return;
  }
  // SQLite: the `revision` column update below does not fire the `UPDATE OF` trigger again.
  const now = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
  await sql
    .raw(
      `
    CREATE TRIGGER vectors_revision_insert AFTER INSERT ON vectors BEGIN
      UPDATE vector_clock SET revision = revision + 1 WHERE id = 1;
      UPDATE vectors SET revision = (SELECT revision FROM vector_clock WHERE id = 1) WHERE rowid = NEW.rowid;
    END`,
    )
    .execute(db);
  await sql
    .raw(
      `
    CREATE TRIGGER vectors_revision_update AFTER UPDATE OF model, dimensions, vector, etag, caller_etag ON vectors BEGIN
      UPDATE vector_clock SET revision = revision + 1 WHERE id = 1 AND OLD.model <> NEW.model;
      INSERT INTO vector_tombstones SELECT OLD.project_id, OLD.owner_kind, OLD.type, OLD.model, OLD.owner_id, revision, ${now}
        FROM vector_clock WHERE id = 1 AND OLD.model <> NEW.model;
      UPDATE vector_clock SET revision = revision + 1 WHERE id = 1;
      UPDATE vectors SET revision = (SELECT revision FROM vector_clock WHERE id = 1) WHERE rowid = NEW.rowid;
    END`,
    )
    .execute(db);
  await sql
    .raw(
      `
    CREATE TRIGGER vectors_tombstone AFTER DELETE ON vectors BEGIN
      UPDATE vector_clock SET revision = revision + 1 WHERE id = 1;
      INSERT INTO vector_tombstones SELECT OLD.project_id, OLD.owner_kind, OLD.type, OLD.model, OLD.owner_id, revision, ${now}
        FROM vector_clock WHERE id = 1;
    END`,
    )
    .execute(db);
}
