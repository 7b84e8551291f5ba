/**
 * Online evaluation: a rule scores a sampled share of the new production runs of an interaction
 * (any of its versions) or of a run query with chosen evaluators, in the background. Each rule has
 * a job on the durable queue of async runs (kind `evaluation-rule`, subject the rule) that ticks
 * every TICK_MS: it reads the completed runs since its cursor (newest first, at most PAGE), keeps
 * those the sample picks (a hash of the rule and run ids below `sample_rate`: the same run is
 * always picked or not, whichever replica ticks), scores them oldest first with each evaluator, and
 * moves its cursor past the page. Runs of experiments and of judges (tagged `experiment`,
 * `evaluator`) are not production and never picked.
 *
 * Bounds: at most `max_per_minute` runs scored per rule and minute; beyond, the picked runs of that
 * minute are not scored (the rule does not fall behind). Each scoring is admitted by the limiter as
 * a request that executes: over a limit or the quota, the tick stops with the limiter's message as
 * the rule's `last_error` and the next tick tries again.
 */
import { createHash } from 'node:crypto';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { can } from '../auth/permissions.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { JobQueue } from '../jobs/queue.ts';
import type { Job } from '../jobs/model.ts';
import { BadRequest, Conflict, Forbidden, NotFound, OrreryError } from '../util/errors.ts';
import * as store from './rules-store.ts';
import type { RuleRow, RulesDbHandle } from './rules-store.ts';

const RULE_JOB = 'evaluation-rule';
/** How often a rule looks for new runs. */
const TICK_MS = 2000;
/** Runs read per tick: beyond, the older ones of that tick are not looked at. */
const PAGE = 1000;
const RULE_BOUNDS = { nameChars: 200, evaluators: 10, maxPerMinute: 600, queryChars: 4000, pageLimit: 1000 };
const DEFAULT_PER_MINUTE = 60;
const NOT_PRODUCTION = 'NOT tags:experiment AND NOT tags:evaluator';

export interface RuleInput {
  name?: string;
  interaction?: string | null;
  query?: string | null;
  evaluators?: string[];
  sample_rate?: number;
  max_per_minute?: number;
  enabled?: boolean;
}

export interface RuleDto {
  id: string;
  name: string;
  interaction?: string;
  query?: string;
  evaluators: string[];
  sample_rate: number;
  max_per_minute: number;
  enabled: boolean;
  scored: number;
  last_error?: string;
  cursor: string;
  created_by: string;
  created_at: string;
  updated_at: string;
}

interface RunLike {
  id: string;
  status?: string;
  parameters?: unknown;
  result?: Array<{ type: string; value: unknown }>;
  execution_time?: number;
  cost?: { total?: number } | null;
}

export interface RuleDeps {
  db: RulesDbHandle;
  dialect: OrreryDialect;
  queue: JobQueue;
  /** The ids of an interaction (by id or selector) and of its versions; a 404 when there is none. */
  interactionIds(p: Principal, selector: string): Promise<string[]>;
  evaluatorExists(p: Principal, id: string): Promise<boolean>;
  /** Checks a Lucene run query (throws its 400). */
  checkQuery(p: Principal, query: string): Promise<void>;
  /** Completed runs updated at or after `since`, newest first. */
  newRuns(
    p: Principal,
    q: { interaction?: string[]; query: string; since: string; limit: number },
  ): Promise<Array<{ id: string; updated_at: string }>>;
  getRun(p: Principal, id: string): Promise<RunLike>;
  /** Scores a run with the evaluator's current version (its error answered, not thrown). */
  evaluate(p: Principal, evaluator: string, run: RunLike): Promise<{ error?: { message: string } }>;
  admit(p: Principal): Promise<void>;
}

/** Whether the sample picks `run` for `rule`: the same answer on every replica and every tick. */
export function picked(rule: string, run: string, rate: number): boolean {
  if (rate >= 1) return true;
  const h = createHash('sha256').update(`${rule}:${run}`).digest();
  return h.readUInt32BE(0) / 2 ** 32 < rate;
}

const minuteOf = (t: number) => new Date(Math.floor(t / 60_000) * 60_000).toISOString();

export class EvaluationRules {
  constructor(private readonly deps: RuleDeps) {
    deps.queue.register(RULE_JOB, {
      run: (job) => this.tick(job),
      // Given up (its attempts failed): the error kept, the rule ticks again later.
      giveUp: async (job, err) => {
        const message = err instanceof Error ? err.message : String(err);
        await store.updateRule(deps.db, deps.dialect, job.scope, job.subject, { last_error: message });
        await this.schedule(job.scope, job.subject, 60_000);
      },
    });
  }

  async create(p: Principal, input: RuleInput): Promise<RuleDto> {
    if (!can(p.role, 'run:score'))
      throw new Forbidden(`a rule scores runs: the caller's role (${p.role}) needs run:score`);
    const s = scopeOf(p);
    const name = (input.name ?? '').trim();
    if (!name || name.length > RULE_BOUNDS.nameChars)
      throw new BadRequest(`name is 1 to ${RULE_BOUNDS.nameChars} characters`);
    if (await store.ruleNamed(this.deps.db, s, name)) throw new Conflict(`a rule named ${JSON.stringify(name)} exists`);
    const fields = await this.check(p, {
      interaction: input.interaction ?? null,
      query: input.query ?? null,
      evaluators: input.evaluators ?? [],
      sample_rate: input.sample_rate ?? 1,
      max_per_minute: input.max_per_minute ?? DEFAULT_PER_MINUTE,
    });
    const now = nowIso();
    const row: RuleRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name,
      ...fields,
      enabled: input.enabled ?? true,
      principal: {
        account: p.account,
        project: p.project,
        keyId: p.keyId,
        role: p.role,
        via: p.via,
        ...(p.user ? { user: p.user } : {}),
      },
      // New runs only: from the rule's creation on.
      cursor_at: now,
      cursor_id: '',
      scored: 0,
      window_minute: minuteOf(Date.now()),
      window_count: 0,
      last_error: null,
      created_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await store.insertRule(this.deps.db, this.deps.dialect, row);
    if (row.enabled) await this.schedule(s, row.id, TICK_MS);
    return dto(row);
  }

  async list(p: Principal, q: { limit?: number; offset?: number }): Promise<RuleDto[]> {
    const rows = await store.listRules(this.deps.db, this.deps.dialect, scopeOf(p), {
      limit: Math.min(q.limit ?? 100, RULE_BOUNDS.pageLimit),
      offset: q.offset ?? 0,
    });
    return rows.map(dto);
  }

  async retrieve(p: Principal, id: string): Promise<RuleDto> {
    return dto(await this.row(scopeOf(p), id));
  }

  async update(p: Principal, id: string, input: RuleInput): Promise<RuleDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    if (Object.keys(input).length === 0) throw new BadRequest('pass at least one field to change');
    let name = row.name;
    if (input.name !== undefined) {
      name = input.name.trim();
      if (!name || name.length > RULE_BOUNDS.nameChars)
        throw new BadRequest(`name is 1 to ${RULE_BOUNDS.nameChars} characters`);
      if (name !== row.name && (await store.ruleNamed(this.deps.db, s, name)))
        throw new Conflict(`a rule named ${JSON.stringify(name)} exists`);
    }
    const fields = await this.check(p, {
      interaction: input.interaction !== undefined ? input.interaction : row.interaction,
      query: input.query !== undefined ? input.query : row.query,
      evaluators: input.evaluators ?? row.evaluators,
      sample_rate: input.sample_rate ?? row.sample_rate,
      max_per_minute: input.max_per_minute ?? row.max_per_minute,
    });
    const enabled = input.enabled ?? row.enabled;
    const patch = {
      name,
      ...fields,
      enabled,
      updated_at: nowIso(),
      ...(enabled && !row.enabled ? { last_error: null } : {}),
    };
    await store.updateRule(this.deps.db, this.deps.dialect, s, id, patch);
    if (enabled && !row.enabled) await this.schedule(s, id, 0);
    return dto({ ...row, ...patch });
  }

  async remove(p: Principal, id: string): Promise<{ id: string }> {
    if (!(await store.deleteRule(this.deps.db, scopeOf(p), id))) throw new NotFound('evaluation rule', id);
    return { id };
  }

  private async check(
    p: Principal,
    f: Pick<RuleRow, 'interaction' | 'query' | 'evaluators' | 'sample_rate' | 'max_per_minute'>,
  ): Promise<Pick<RuleRow, 'interaction' | 'query' | 'evaluators' | 'sample_rate' | 'max_per_minute'>> {
    if (!f.interaction && !f.query)
      throw new BadRequest('a rule needs interaction (an id or a name) and/or query (a Lucene run query)');
    if (f.interaction)
      await this.deps.interactionIds(p, f.interaction).catch((err: unknown) => {
        if (err instanceof OrreryError && err.status === 404)
          throw new BadRequest(`interaction ${JSON.stringify(f.interaction)} names no interaction of this project`);
        throw err;
      });
    if (f.query) {
      if (f.query.length > RULE_BOUNDS.queryChars)
        throw new BadRequest(`query is at most ${RULE_BOUNDS.queryChars} characters`);
      await this.deps.checkQuery(p, f.query);
    }
    if (!Array.isArray(f.evaluators) || f.evaluators.length < 1 || f.evaluators.length > RULE_BOUNDS.evaluators)
      throw new BadRequest(`evaluators is a list of 1 to ${RULE_BOUNDS.evaluators} evaluator ids`);
    if (new Set(f.evaluators).size !== f.evaluators.length) throw new BadRequest('evaluators names an evaluator twice');
    for (const [i, id] of f.evaluators.entries())
      if (!(await this.deps.evaluatorExists(p, id)))
        throw new BadRequest(`evaluators[${i}] ${JSON.stringify(id)} names no evaluator of this project`);
    if (typeof f.sample_rate !== 'number' || !(f.sample_rate > 0 && f.sample_rate <= 1))
      throw new BadRequest('sample_rate is the share of new runs to score: above 0, at most 1');
    if (!Number.isInteger(f.max_per_minute) || f.max_per_minute < 1 || f.max_per_minute > RULE_BOUNDS.maxPerMinute)
      throw new BadRequest(`max_per_minute is a whole number from 1 to ${RULE_BOUNDS.maxPerMinute}`);
    return f;
  }

  private async row(s: Scope, id: string): Promise<RuleRow> {
    const row = await store.getRule(this.deps.db, this.deps.dialect, s, id);
    if (!row) throw new NotFound('evaluation rule', id);
    return row;
  }

  private async schedule(s: Scope, id: string, delayMs: number): Promise<void> {
    await this.deps.queue.enqueue({ kind: RULE_JOB, scope: s, subject: id, payload: {}, delayMs });
  }

  /** One look for new runs; then the next tick is queued (a deleted or disabled rule has none). */
  private async tick(job: Job): Promise<void> {
    const { db, dialect } = this.deps;
    const s = job.scope;
    const rule = await store.getRule(db, dialect, s, job.subject);
    if (!rule || !rule.enabled) return;
    const p = rule.principal as unknown as Principal;
    const now = Date.now();
    const minute = minuteOf(now);
    let count = rule.window_minute === minute ? rule.window_count : 0;
    let lastError: string | null = null;
    let scored = 0;
    let cursor = { at: rule.cursor_at, id: rule.cursor_id };
    const interaction = rule.interaction
      ? await this.deps.interactionIds(p, rule.interaction).catch(() => [])
      : undefined;
    if (interaction && !interaction.length)
      lastError = `interaction ${JSON.stringify(rule.interaction)} no longer exists: the rule scores nothing`;
    else {
      const found = (
        await this.deps.newRuns(p, {
          ...(interaction ? { interaction } : {}),
          query: rule.query ? `(${rule.query}) AND ${NOT_PRODUCTION}` : NOT_PRODUCTION,
          since: rule.cursor_at,
          limit: PAGE,
        })
      ).filter((r) => r.id !== rule.cursor_id);
      // Oldest first, within the minute's bound; the cursor moves past each run looked at.
      for (const r of found.reverse()) {
        if (picked(rule.id, r.id, rule.sample_rate) && count < rule.max_per_minute) {
          try {
            await this.deps.admit(p);
          } catch (err) {
            if (!(err instanceof OrreryError) || err.status !== 429) throw err;
            lastError = `scoring paused: ${err.message}`;
            break; // this run and the newer ones are looked at again at the next tick
          }
          const run = await this.deps.getRun(p, r.id).catch(() => undefined); // deleted since: nothing to score
          if (run) {
            for (const ev of rule.evaluators) {
              const out = await this.deps.evaluate(p, ev, run).catch((err: unknown) => {
                if (err instanceof OrreryError && err.status < 500) return { error: { message: err.message } };
                throw err;
              });
              if (out.error) lastError = `evaluator ${ev} on run ${r.id}: ${out.error.message}`;
            }
            count++;
            scored++;
          }
        }
        cursor = { at: r.updated_at, id: r.id };
      }
    }
    await store.updateRule(db, dialect, s, rule.id, {
      cursor_at: cursor.at,
      cursor_id: cursor.id,
      scored: rule.scored + scored,
      window_minute: minute,
      window_count: count,
      last_error: lastError ?? rule.last_error,
    });
    await this.schedule(s, rule.id, TICK_MS);
  }
}

function dto(r: RuleRow): RuleDto {
  return {
    id: r.id,
    name: r.name,
    ...(r.interaction ? { interaction: r.interaction } : {}),
    ...(r.query ? { query: r.query } : {}),
    evaluators: r.evaluators,
    sample_rate: r.sample_rate,
    max_per_minute: r.max_per_minute,
    enabled: r.enabled,
    scored: r.scored,
    ...(r.last_error ? { last_error: r.last_error } : {}),
    cursor: r.cursor_at,
    created_by: r.created_by,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
