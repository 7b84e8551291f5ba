/**
 * Whether PostgreSQL offers pgvector (the `vector` extension). Orrery's similarity index is
 * in-process (usearch HNSW over the vectors stored as bytea) on both databases; pgvector is
 * reported, not used: it is not packaged for Debian bookworm, so no machine here can test a path
 * that relies on it (README, "Embeddings and similarity").
 */
import { sql, type Kysely } from 'kysely';
import type { OrreryDialect } from './dialect.ts';

export type VectorExtension = 'not_postgres' | 'absent' | 'available' | 'installed';

export async function detectVectorExtension(db: Kysely<any>, dialect: OrreryDialect): Promise<VectorExtension> {
  if (!dialect.caps.notify) return 'not_postgres';
  const r = await sql<{
    installed: string | null;
  }>`SELECT installed_version AS installed FROM pg_available_extensions WHERE name = 'vector'`.execute(db);
  if (!r.rows.length) return 'absent';
  return r.rows[0].installed ? 'installed' : 'available';
}
