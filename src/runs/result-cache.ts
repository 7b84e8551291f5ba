/**
 * The result cache of runs, from an interaction's `cache_policy` (Vertesia's CachePolicy):
 *  - `cache`: an answer stored for the same key within `ttl` seconds is answered again;
 *  - `cache_and_refresh`: the same, but a hit is run again with `refresh_probability`, and the
 *    fresh answer replaces the stored one;
 *  - `no_cache` (or no policy): never.
 * The key is a hash of the canonical JSON of the environment, the model, the options, the
 * rendered prompt, the result schema and the `varies_on` fields of the data. Entries live in the
 * database (`run_cache`, migration 0010), so every replica shares them; each project keeps about
 * MAX_ENTRIES_PER_PROJECT (trimmed every TRIM_EVERY stores of a process), and answers larger than
 * MAX_RESULT_BYTES are not kept. Expired entries are misses, and swept periodically.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { CachePolicy } from '../interactions/interactions.ts';
import type { ResultPart } from './model.ts';
import type { ContentPart, ToolUse } from '../providers/driver.ts';

const MAX_ENTRIES_PER_PROJECT = 10_000;
const MAX_RESULT_BYTES = 1024 * 1024;
/** Trimming reads the project's index past the bound: done every so many stores, not on each. */
const TRIM_EVERY = 100;
/** A policy without a ttl keeps answers a day. */
const DEFAULT_TTL_SECONDS = 86_400;

export interface CacheScope {
  account: string;
  project: string;
}

export interface CachedAnswer {
  runId: string;
  result: ResultPart[];
  finishReason?: string;
  /** The calls of an answer that asked for tools (finish_reason tool_use). */
  toolUse?: ToolUse[];
}

/** What a run's creation decided: look up (and maybe serve) the key, and store the answer under it. */
export interface CacheDecision {
  key: string;
  ttlSeconds: number;
  /** cache_and_refresh that drew a refresh: run the provider even on a hit. */
  refresh: boolean;
}

export interface KeyParts {
  environment: string;
  model: string;
  options: Record<string, unknown>;
  messages: Array<{ role: string; content: string | ContentPart[] }>;
  resultSchema?: Record<string, unknown>;
  data: unknown;
}

export class ResultCache {
  private stores = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly random: () => number = Math.random,
  ) {}

  /** Undefined when the policy caches nothing. */
  decide(policy: CachePolicy | undefined, parts: KeyParts): CacheDecision | undefined {
    if (!policy || (policy.type !== 'cache' && policy.type !== 'cache_and_refresh')) return undefined;
    const varies = Object.fromEntries(
      (policy.varies_on ?? []).map((path) => [path, valueAt(parts.data, path) ?? null]),
    );
    const key = createHash('sha256')
      .update(
        canonicalJson({
          e: parts.environment,
          m: parts.model,
          o: parts.options,
          p: parts.messages,
          s: parts.resultSchema ?? null,
          v: varies,
        }),
      )
      .digest('hex');
    const refresh = policy.type === 'cache_and_refresh' && this.random() < (policy.refresh_probability ?? 0);
    return { key, ttlSeconds: policy.ttl && policy.ttl > 0 ? policy.ttl : DEFAULT_TTL_SECONDS, refresh };
  }

  async lookup(scope: CacheScope, key: string): Promise<CachedAnswer | undefined> {
    const row = await this.db
      .selectFrom('run_cache')
      .select(['run_id', 'result', 'finish_reason'])
      .where('project_id', '=', scope.project)
      .where('key', '=', key)
      .where('expires_at', '>', new Date().toISOString())
      .executeTakeFirst();
    if (!row) return undefined;
    const result = this.dialect.fromJson<ResultPart[]>(row.result);
    const answer = { runId: row.run_id, result, ...(row.finish_reason ? { finishReason: row.finish_reason } : {}) };
    if (row.finish_reason !== 'tool_use') return answer;
    // An answer that asks for tools is its calls: they are read from the run that answered, and
    // without that run (deleted since) there is nothing whole to serve.
    const source = await this.db
      .selectFrom('runs')
      .select('doc')
      .where('id', '=', row.run_id)
      .where('project_id', '=', scope.project)
      .executeTakeFirst();
    const toolUse = source ? this.dialect.fromJson<{ tool_use?: ToolUse[] }>(source.doc).tool_use : undefined;
    return toolUse?.length ? { ...answer, toolUse } : undefined;
  }

  /** Keeps a completed run's answer under the key; false when it is too large to keep. */
  async store(
    scope: CacheScope,
    decision: CacheDecision,
    runId: string,
    result: ResultPart[],
    finishReason: string | undefined,
  ): Promise<boolean> {
    const encoded = JSON.stringify(result);
    if (Buffer.byteLength(encoded) > MAX_RESULT_BYTES) return false;
    const now = new Date();
    const row = {
      project_id: scope.project,
      key: decision.key,
      account_id: scope.account,
      run_id: runId,
      result: this.dialect.toJson(result),
      finish_reason: finishReason ?? null,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + decision.ttlSeconds * 1000).toISOString(),
    };
    await this.db
      .insertInto('run_cache')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['project_id', 'key']).doUpdateSet({
          account_id: row.account_id,
          run_id: row.run_id,
          result: row.result,
          finish_reason: row.finish_reason,
          created_at: row.created_at,
          expires_at: row.expires_at,
        }),
      )
      .execute();
    if (++this.stores % TRIM_EVERY === 0) await this.trim(scope.project);
    return true;
  }

  /** The project's oldest entries past the bound go. */
  private async trim(project: string): Promise<void> {
    const cutoff = await this.db
      .selectFrom('run_cache')
      .select('created_at')
      .where('project_id', '=', project)
      .orderBy('created_at', 'desc')
      .limit(1)
      .offset(MAX_ENTRIES_PER_PROJECT)
      .executeTakeFirst();
    if (cutoff)
      await this.db
        .deleteFrom('run_cache')
        .where('project_id', '=', project)
        .where('created_at', '<=', cutoff.created_at)
        .execute();
  }

  /** Drops expired entries of every project (the periodic sweep); answers how many. */
  async sweep(): Promise<number> {
    const r = await this.db
      .deleteFrom('run_cache')
      .where('expires_at', '<=', new Date().toISOString())
      .executeTakeFirst();
    return Number(r.numDeletedRows ?? 0);
  }
}

/** JSON with object keys sorted at every level, so equal values give equal keys. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v as object)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** A dotted path into the data, own properties only (no prototype keys). */
function valueAt(data: unknown, path: string): unknown {
  let at: unknown = data;
  for (const part of path.split('.')) {
    if (!at || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}
