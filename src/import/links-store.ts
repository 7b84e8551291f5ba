/**
 * SQL for import links (migration 0022). The table is declared here, with the slice of it this
 * feature uses (style K3), so the shared schema stays untouched. Every query is scoped by project.
 */
import type { Kysely } from 'kysely';
import type { Scope } from '../auth/principal.ts';

interface ImportLinkTable {
  account_id: string;
  project_id: string;
  source: string;
  kind: string;
  source_id: string;
  target_id: string;
  source_version: string | null;
  created_at: string;
  updated_at: string;
}

export interface LinksDb {
  import_links: ImportLinkTable;
}

/** One copied thing: where it came from, what it became, and which version of it was copied. */
export interface ImportLink {
  kind: string;
  source_id: string;
  target_id: string;
  source_version: string | null;
}

export const linksOf = (db: Kysely<unknown>) => db as unknown as Kysely<LinksDb>;

/** One page in (kind, source id) order, after the `after` position (keyset: no offset to scan). */
export async function listLinks(
  db: Kysely<LinksDb>,
  s: Scope,
  source: string,
  opts: { kind?: string; after?: { kind: string; source_id: string }; limit: number },
): Promise<ImportLink[]> {
  let q = db
    .selectFrom('import_links')
    .select(['kind', 'source_id', 'target_id', 'source_version'])
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('source', '=', source);
  if (opts.kind) q = q.where('kind', '=', opts.kind);
  const after = opts.after;
  if (after)
    q = q.where((eb) =>
      eb.or([
        eb('kind', '>', after.kind),
        eb.and([eb('kind', '=', after.kind), eb('source_id', '>', after.source_id)]),
      ]),
    );
  return q.orderBy('kind').orderBy('source_id').limit(opts.limit).execute();
}

export async function findLink(
  db: Kysely<LinksDb>,
  s: Scope,
  source: string,
  kind: string,
  sourceId: string,
): Promise<ImportLink | undefined> {
  return db
    .selectFrom('import_links')
    .select(['kind', 'source_id', 'target_id', 'source_version'])
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('source', '=', source)
    .where('kind', '=', kind)
    .where('source_id', '=', sourceId)
    .executeTakeFirst();
}

/** Inserts or replaces the link of (project, source, kind, source id): one statement on both dialects. */
export async function putLink(db: Kysely<LinksDb>, s: Scope, source: string, link: ImportLink): Promise<void> {
  const now = new Date().toISOString();
  await db
    .insertInto('import_links')
    .values({ account_id: s.account, project_id: s.project, source, ...link, created_at: now, updated_at: now })
    .onConflict((oc) =>
      oc
        .columns(['project_id', 'source', 'kind', 'source_id'])
        .doUpdateSet({ target_id: link.target_id, source_version: link.source_version, updated_at: now }),
    )
    .execute();
}
