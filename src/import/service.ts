/**
 * The target side of `orrery import` that the public API has no route for: the import links
 * (where each copy came from) and runs stored as records (copied, never re-executed). Both the
 * local mode and `--to` reach it through HTTP (routes.ts), so the two modes share one path.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest } from '../util/errors.ts';
import { DEFAULT_MAX_INLINE_JSON, checkInlineJson } from '../limits/inline-json.ts';
import { newId } from '../db/ids.ts';
import type { RunWrites } from '../runs/run-writer.ts';
import type { ResultPart, RunDoc, RunRow } from '../runs/model.ts';
import type { ToolUse } from '../providers/driver.ts';
import { findLink, linksOf, listLinks, putLink, type ImportLink, type LinksDb } from './links-store.ts';

export const LINK_KINDS = [
  'environment',
  'prompt',
  'interaction',
  'interaction_version',
  'type',
  'object',
  'run',
] as const;

/** A source run as the official client retrieves it, references already rewritten to the copies. */
export interface ImportedRun {
  status: string;
  interaction: { id: string; name?: string; endpoint?: string; version?: number };
  environment?: { id: string; name?: string; provider?: string } | null;
  modelId?: string | null;
  parent?: string | null;
  finish_reason?: string | null;
  execution_time?: number | null;
  token_use?: { prompt?: number; result?: number; total?: number } | null;
  tags?: string[];
  result?: unknown;
  parameters?: unknown;
  prompt?: unknown;
  config?: Record<string, unknown>;
  error?: { code: string; message: string; data?: unknown } | null;
  source?: Record<string, unknown> | null;
  ttl?: number | null;
  result_schema?: Record<string, unknown> | null;
  cost?: unknown;
  /** The calls the model asked for. */
  tool_use?: ToolUse[];
  /** The copy of the run this one continues (a later turn of a conversation), already imported. */
  previous_run?: string | null;
  created_by?: string;
  created_at: string;
  updated_at: string;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Fields of an imported run stored inline besides parameters, result and prompt: each under the same bound. */
const OTHER_STORED = ['config', 'error', 'source', 'result_schema', 'cost', 'tool_use'] as const;

/** What an import's JSON carries besides its run's fields (source, ids, the envelope). */
const ENVELOPE_BYTES = 64 * 1024;

/**
 * The largest body of POST /import/runs: parameters, result and prompt at the inline bound, and as
 * much again for the run's other fields. A bigger body is refused before it is read, so a 15 MB
 * import costs the event loop nothing (its parse alone held it for a tenth of a second).
 */
const maxImportBodyBytes = (maxInlineJson: number = DEFAULT_MAX_INLINE_JSON): number =>
  4 * maxInlineJson + ENVELOPE_BYTES;

/** What an import reads and writes of other features, through their services. */
export interface ImportTargets {
  /** Whether the caller's project holds the run. */
  runExists(p: Principal, id: string): Promise<boolean>;
  /** The turn of the caller's run in its conversation, or NotFound. */
  runTurn(p: Principal, id: string): Promise<number>;
  /** The interaction of the caller's project, or NotFound. */
  interaction(p: Principal, id: string): Promise<{ id: string; name: string; endpoint: string; version: number }>;
  /** The environment of the caller's project, or NotFound. */
  environment(p: Principal, id: string): Promise<{ id: string; name: string; provider: string }>;
  /**
   * The server's run writer. On SQLite it is the run writer thread, which derives the run's search
   * fields and writes them off the event loop (a 1 MB run has thousands of JSON paths).
   */
  writes: RunWrites;
}

export class ImportService {
  private readonly links: Kysely<LinksDb>;

  constructor(
    db: Kysely<Database>,
    private readonly targets: ImportTargets,
    private readonly maxInlineJson: number = DEFAULT_MAX_INLINE_JSON,
  ) {
    this.links = linksOf(db as Kysely<unknown>);
  }

  /** The bound on the body of POST /import/runs, in bytes. */
  get maxBodyBytes(): number {
    return maxImportBodyBytes(this.maxInlineJson);
  }

  list(
    p: Principal,
    source: string,
    opts: { kind?: string; after?: { kind: string; source_id: string }; limit: number },
  ): Promise<ImportLink[]> {
    return listLinks(this.links, scopeOf(p), sourceKey(source), opts);
  }

  async put(p: Principal, source: string, link: ImportLink): Promise<ImportLink> {
    if (!(LINK_KINDS as readonly string[]).includes(link.kind))
      throw new BadRequest(`kind must be one of ${LINK_KINDS.join(', ')}`);
    await putLink(this.links, scopeOf(p), sourceKey(source), link);
    return link;
  }

  /**
   * Stores a run as a record, with its link: a second call for the same source run answers the
   * copy made by the first. Only ended runs are copied (a `processing`
   * copy would be failed by the lost-run sweeper, since no replica executes it).
   */
  async importRun(
    p: Principal,
    source: string,
    sourceId: string,
    sourceVersion: string | null,
    run: ImportedRun,
  ): Promise<{ id: string; created: boolean }> {
    for (const field of ['parameters', 'result', 'prompt', ...OTHER_STORED] as const)
      checkInlineJson(run[field], `run.${field}`, this.maxInlineJson);
    const s = scopeOf(p);
    const key = sourceKey(source);
    if (run.status !== 'completed' && run.status !== 'failed')
      throw new BadRequest(`only ended runs (completed, failed) can be imported, not "${run.status}"`);
    if (!run.interaction?.id) throw new BadRequest('run.interaction.id is required');
    for (const [field, v] of [
      ['created_at', run.created_at],
      ['updated_at', run.updated_at],
    ] as const) {
      if (typeof v !== 'string' || Number.isNaN(Date.parse(v)))
        throw new BadRequest(`run.${field} must be an ISO 8601 date`);
    }
    const existing = await findLink(this.links, s, key, 'run', sourceId);
    if (existing && (await this.targets.runExists(p, existing.target_id))) {
      return { id: existing.target_id, created: false };
    }
    const interaction = await this.targets.interaction(p, run.interaction.id);
    const env = run.environment?.id ? await this.targets.environment(p, run.environment.id) : undefined;
    // A later turn: its chain must be whole here, so the copy continues like the source run.
    const turn = run.previous_run
      ? 1 +
        (await this.targets.runTurn(p, run.previous_run).catch((err: unknown) => {
          if ((err as { status?: number } | null)?.status === 404)
            throw new BadRequest(`run.previous_run ${run.previous_run} is no run of this project: import it first`);
          throw err instanceof Error ? err : new Error(String(err));
        }))
      : 1;
    const tokens = run.token_use ?? {};
    const doc: RunDoc = {
      result: (Array.isArray(run.result) ? run.result : []) as ResultPart[],
      parameters: run.parameters ?? {},
      prompt: (Array.isArray(run.prompt) ? run.prompt : []) as RunDoc['prompt'],
      config: run.config ?? {},
      ...(run.error ? { error: run.error } : {}),
      source: {
        type: 'import',
        label: `imported from ${key}`,
        principal_type: 'apikey',
        principal_id: p.keyId,
        client_ip: '',
        ...(run.source ?? {}),
      } as RunDoc['source'],
      ttl: num(run.ttl) ?? 0,
      stream: false,
      interaction: {
        id: interaction.id,
        name: interaction.name,
        endpoint: interaction.endpoint,
        version: interaction.version,
      },
      environment: env ? { id: env.id, name: env.name, provider: env.provider } : null,
      ...(run.result_schema ? { result_schema: run.result_schema } : {}),
      account: p.account,
      project: p.project,
      created_by: run.created_by ?? `apikey:${p.keyId}`,
      cost: (run.cost ?? null) as RunDoc['cost'],
      ...(run.tool_use?.length ? { tool_use: run.tool_use } : {}),
      ...(run.previous_run ? { previous_run: run.previous_run, conversation: { turn } } : {}),
    };
    const row: RunRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      interaction_id: interaction.id,
      environment_id: env?.id ?? null,
      model_id: run.modelId ?? null,
      status: run.status,
      parent_id: run.parent ?? null,
      finish_reason: run.finish_reason ?? null,
      execution_time: num(run.execution_time),
      token_prompt: num(tokens.prompt),
      token_result: num(tokens.result),
      token_total: num(tokens.total),
      tags: run.tags ?? [],
      created_at: run.created_at,
      updated_at: run.updated_at,
      doc,
      executor: null,
    };
    // The link first, then the run: a link whose run is missing (the process died between the two)
    // is taken as no link by the check above, so the next import of this run makes it again.
    await putLink(this.links, s, key, {
      kind: 'run',
      source_id: sourceId,
      target_id: row.id,
      source_version: sourceVersion,
    });
    await this.targets.writes.insert(row, [...new Set(run.tags ?? [])]);
    return { id: row.id, created: true };
  }
}

/** One source server, however its URL was written: origin (and path) without a trailing slash or /api/v1. */
export function sourceKey(source: string): string {
  try {
    const u = new URL(source);
    // The official client adds /api/v1 itself: a URL given with it names the same server.
    return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}`;
  } catch {
    throw new BadRequest(`source must be the URL of the source server, got ${JSON.stringify(source)}`);
  }
}
