/**
 * Where saved graphs live in their store, and which are kept. A graph is worth its bytes (hundreds
 * of MB per 100,000 vectors) only while its partition is configured: its project exists, its type
 * is not disabled and its model is the project's model. Every other one (a deleted project, a model
 * replaced, a type turned off) is deleted; one that is needed again is rebuilt from the table.
 */
import { createHash } from 'node:crypto';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { AuthReads } from '../auth/reads.ts';
import { EMBEDDING_KINDS, isDisabled, parseStored } from './settings.ts';

const SUFFIX = '.graph';

/** The key of a partition's graph: `<prefix><project>/<hash of the partition id>.graph`. */
export function graphKeyOf(prefix: string, project: string, partition: string): string {
  const hash = createHash('sha256').update(partition).digest('hex').slice(0, 32);
  return `${prefix}${encodeURIComponent(project)}/${hash}${SUFFIX}`;
}

/** The partition ids of a project whose graphs are kept; null when the project is gone. */
async function configuredPartitions(
  projectSettings: AuthReads['projectSettings'],
  project: string,
): Promise<Set<string> | null> {
  const all = await projectSettings(project);
  if (!all) return null;
  const settings = parseStored(all.embeddings);
  // Vectors are stored for objects only (a run's are answered, not kept).
  return new Set(
    EMBEDDING_KINDS.filter((type) => !isDisabled(settings, type)).map(
      (type) => `${project}|object|${type}|${settings.model}`,
    ),
  );
}

export interface PruneInput {
  store: BlobStore;
  prefix: string;
  /** A project's settings (auth's rows), null when it is gone. */
  projectSettings: AuthReads['projectSettings'];
  /** One project (after it was deleted or its settings changed); absent: every project in the store. */
  project?: string;
}

/** Deletes the saved graphs no partition is configured for; answers them, and the partition ids still configured per project looked at. */
export async function pruneGraphs(
  i: PruneInput,
): Promise<{ deleted: Array<{ project: string; key: string }>; kept: Map<string, Set<string> | null> }> {
  const from = i.project === undefined ? i.prefix : `${i.prefix}${encodeURIComponent(i.project)}/`;
  const byProject = new Map<string, string[]>();
  for await (const key of i.store.list(from)) {
    const rest = key.slice(i.prefix.length);
    const slash = rest.indexOf('/');
    if (slash <= 0 || !rest.endsWith(SUFFIX)) continue;
    let project: string;
    try {
      project = decodeURIComponent(rest.slice(0, slash));
    } catch {
      continue;
    }
    byProject.set(project, [...(byProject.get(project) ?? []), key]);
  }
  if (i.project !== undefined && !byProject.has(i.project)) byProject.set(i.project, []);
  const deleted: Array<{ project: string; key: string }> = [];
  const kept = new Map<string, Set<string> | null>();
  for (const [project, keys] of byProject) {
    const configured = await configuredPartitions(i.projectSettings, project);
    kept.set(project, configured);
    const wanted = new Set([...(configured ?? [])].map((p) => graphKeyOf(i.prefix, project, p)));
    for (const key of keys) {
      if (wanted.has(key)) continue;
      await i.store.delete(key);
      deleted.push({ project, key });
    }
  }
  return { deleted, kept };
}
