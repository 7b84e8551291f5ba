/**
 * Scores on runs: a named value (a number, a boolean or a category string) given to a run through
 * the API, by a person or by an evaluator. A name holds one kind of value within a project (the
 * first score given fixes it), so searches, facets and means over a name compare like with like.
 * A run keeps every score given to it; it answers the latest per name.
 */
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { newId, nowIso } from '../db/ids.ts';
import { isPathSegment } from '../query/lucene/index.ts';
import { BadRequest, Conflict, NotFound, PayloadTooLarge } from '../util/errors.ts';
import type { RawBuilder } from 'kysely';
import type { RunValueAggregate, RunValueGroup } from '../runs/reads.ts';
import * as store from './store.ts';
import type { Db, ScoreKind, ScoreRow, ScoreSource } from './store.ts';

/** Bounds of what a request may store (docs/reference/limits.md). */
const SCORE_BOUNDS = { nameChars: 100, categoryChars: 200, commentChars: 4000, scoresPerRun: 1000 };

type ScoreValue = number | boolean | string;

export interface NewScore {
  name: string;
  value: ScoreValue;
  comment?: string;
  source?: ScoreSource;
  evaluator?: string;
}

export interface ScoreDto {
  id: string;
  run: string;
  name: string;
  value: ScoreValue;
  source: ScoreSource;
  evaluator?: string;
  comment?: string;
  created_by: string;
  created_at: string;
}

/** A run's latest score of a name, as the run answers it. */
export type LatestScore = Omit<ScoreDto, 'run' | 'name' | 'created_by'>;

/** What scores need of runs and evaluators: whether the caller's project holds them, and the runs' means. */
export interface ScoreTargets {
  runExists(p: Principal, id: string): Promise<boolean>;
  evaluatorExists?(p: Principal, id: string): Promise<boolean>;
  /** Per-run `values` aggregated over the project's runs (runs/reads.ts `aggregateRunValues`). */
  aggregateRuns(
    s: Scope,
    values: RawBuilder<{ run_id: string; value: number }>,
    q: { group: RunValueGroup; from?: string; to?: string; interaction?: string },
  ): Promise<RunValueAggregate[]>;
}

const kindOf = (v: ScoreValue): ScoreKind =>
  typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'category';

const KIND_WORDS: Record<ScoreKind, string> = { number: 'numbers', boolean: 'booleans', category: 'category strings' };

export function valueOf(r: Pick<ScoreRow, 'kind' | 'num_value' | 'text_value'>): ScoreValue {
  if (r.kind === 'number') return Number(r.num_value);
  if (r.kind === 'boolean') return r.text_value === 'true';
  return r.text_value ?? '';
}

function dto(r: ScoreRow): ScoreDto {
  return {
    id: r.id,
    run: r.run_id,
    name: r.name,
    value: valueOf(r),
    source: r.source,
    ...(r.evaluator_id ? { evaluator: r.evaluator_id } : {}),
    ...(r.comment !== null ? { comment: r.comment } : {}),
    created_by: r.created_by,
    created_at: r.created_at,
  };
}

export class ScoreService {
  constructor(
    private readonly db: Db,
    private readonly targets: ScoreTargets,
  ) {}

  /** Checks a name the way run search can reach it (`scores.<name>`). */
  static checkName(name: string, at = 'name'): string {
    if (!name || name.length > SCORE_BOUNDS.nameChars || !isPathSegment(name))
      throw new BadRequest(
        `${at} is 1 to ${SCORE_BOUNDS.nameChars} letters, digits, _ or - (run search reaches it as scores.<name>), got ${JSON.stringify(name)}`,
      );
    return name;
  }

  async add(p: Principal, run: string, input: NewScore): Promise<ScoreDto> {
    const name = ScoreService.checkName(input.name);
    const value = input.value;
    if (typeof value === 'number' && !Number.isFinite(value)) throw new BadRequest('value must be a finite number');
    if (typeof value === 'string' && (value.length === 0 || value.length > SCORE_BOUNDS.categoryChars))
      throw new BadRequest(`a category value is 1 to ${SCORE_BOUNDS.categoryChars} characters`);
    if (input.comment !== undefined && input.comment.length > SCORE_BOUNDS.commentChars)
      throw new BadRequest(`comment is at most ${SCORE_BOUNDS.commentChars} characters`);
    const source = input.source ?? 'api';
    if (source === 'evaluator' && !input.evaluator)
      throw new BadRequest("source evaluator needs evaluator: the evaluator's id");
    if (source !== 'evaluator' && input.evaluator !== undefined)
      throw new BadRequest('evaluator is given only with source: evaluator');
    if (!(await this.targets.runExists(p, run))) throw new NotFound('run', run);
    if (input.evaluator && this.targets.evaluatorExists && !(await this.targets.evaluatorExists(p, input.evaluator)))
      throw new NotFound('evaluator', input.evaluator);
    return this.record(scopeOf(p), actorOf(p), run, { ...input, name, source });
  }

  /** Stores a score on a run known to be the caller's (evaluators call this directly). */
  async record(s: Scope, actor: string, run: string, input: NewScore & { source: ScoreSource }): Promise<ScoreDto> {
    const kind = kindOf(input.value);
    const now = nowIso();
    const row: ScoreRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      run_id: run,
      name: input.name,
      kind,
      num_value: kind === 'number' ? (input.value as number) : null,
      text_value: kind === 'number' ? null : String(input.value),
      comment: input.comment ?? null,
      source: input.source,
      evaluator_id: input.evaluator ?? null,
      latest: 1,
      created_by: actor,
      created_at: now,
    };
    await this.db.transaction().execute(async (trx) => {
      const held = await store.claimKind(trx, s, input.name, kind, now);
      if (held !== kind)
        throw new Conflict(
          `score ${JSON.stringify(input.name)} holds ${KIND_WORDS[held]} in this project; this value is a ${kind === 'category' ? 'category string' : kind}: give a ${held === 'category' ? 'category string' : held} or use another name`,
          { name: input.name, kind: held },
        );
      if ((await store.countOfRun(trx, run)) >= SCORE_BOUNDS.scoresPerRun)
        throw new PayloadTooLarge(
          `a run keeps at most ${SCORE_BOUNDS.scoresPerRun} scores: delete some (DELETE /runs/:id/scores/:scoreId)`,
        );
      await store.insertScore(trx, row);
    });
    return dto(row);
  }

  async list(p: Principal, run: string): Promise<ScoreDto[]> {
    if (!(await this.targets.runExists(p, run))) throw new NotFound('run', run);
    return (await store.scoresOfRun(this.db, scopeOf(p), run)).map(dto);
  }

  async remove(p: Principal, run: string, id: string): Promise<{ id: string }> {
    const s = scopeOf(p);
    const found = await this.db.transaction().execute((trx) => store.deleteScore(trx, s, run, id));
    if (!found) throw new NotFound('score', id);
    return { id };
  }

  /** Means per interaction version, model or day of a number or boolean score (GET /analytics/runs/scores). */
  async analytics(
    p: Principal,
    q: { name: string; group_by: RunValueGroup; from?: string; to?: string; interaction?: string },
  ) {
    const s = scopeOf(p);
    const name = ScoreService.checkName(q.name);
    const bound = (v: string | undefined, at: string) => {
      if (v === undefined) return undefined;
      const t = Date.parse(v);
      if (Number.isNaN(t))
        throw new BadRequest(`${at} must be an ISO 8601 date or date-time, got ${JSON.stringify(v)}`);
      return new Date(t).toISOString();
    };
    const from = bound(q.from, 'from');
    const to = bound(q.to, 'to');
    const kind = (await store.kindOfName(this.db, s, name)) ?? null;
    if (kind === 'category')
      throw new BadRequest(
        `score ${JSON.stringify(name)} holds category strings: a mean needs numbers or booleans (facet it in run search instead)`,
      );
    const groups = kind
      ? await this.targets.aggregateRuns(s, store.latestNumbers(s, name), {
          group: q.group_by,
          from,
          to,
          interaction: q.interaction,
        })
      : [];
    return {
      name,
      kind,
      groups: groups.map((g) => ({
        key: g.key,
        ...(g.interaction !== null ? { interaction: g.interaction, version: g.version } : {}),
        mean: g.mean,
        min: g.min,
        max: g.max,
        count: g.count,
      })),
    };
  }

  /** The latest score per name of each run, by run id. */
  async latest(s: Scope, runs: readonly string[]): Promise<Map<string, Record<string, LatestScore>>> {
    const out = new Map<string, Record<string, LatestScore>>();
    for (const r of await store.latestOfRuns(this.db, s, runs)) {
      const { run: _r, name: _n, created_by: _c, ...latest } = dto(r);
      const of = out.get(r.run_id) ?? {};
      of[r.name] = latest;
      out.set(r.run_id, of);
    }
    return out;
  }
}
