/**
 * Evaluators: stored, versioned ways to score an output. `POST /evaluators` makes version 1, `PUT
 * /evaluators/:id` the next one; a version never changes, so a score names the version that gave
 * it. Evaluating a run reads its input, output and (given) expected value, asks the evaluator's
 * type for a verdict (verdicts.ts), and records the score on the run under the evaluator's name
 * (source evaluator). An evaluator that throws gives no score: the answer records its error.
 */
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import { ScoreService, type ScoreDto } from '../scores/service.ts';
import * as store from './store.ts';
import type { Db, EvaluatorRow, VersionRow } from './store.ts';
import {
  checkConfig,
  EvaluatorFailure,
  verdict,
  type Candidate,
  type EvaluatorType,
  type VerdictDeps,
} from './verdicts.ts';

const BOUNDS = { descriptionChars: 4000, pageLimit: 1000 };

export interface EvaluatorDto {
  id: string;
  name: string;
  description?: string;
  type: string;
  config: Record<string, unknown>;
  version: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

/** A run as an evaluation reads it (runs/model.ts Run, the fields used). */
interface RunLike {
  id: string;
  parameters?: unknown;
  result?: Array<{ type: string; value: unknown }>;
  execution_time?: number;
  cost?: { total?: number } | null;
}

export interface EvaluatorDeps {
  getRun(p: Principal, id: string): Promise<RunLike>;
  /** VerdictDeps for the caller: its judge runs are its own runs. */
  verdicts(p: Principal): VerdictDeps;
  scores: ScoreService;
}

export interface Evaluation {
  evaluator: string;
  version: number;
  score?: ScoreDto;
  reason?: string;
  error?: { message: string };
}

/** A run's output: its JSON answer, else its text parts joined. */
export function outputOf(run: RunLike): unknown {
  const parts = run.result ?? [];
  const json = parts.find((x) => x.type === 'json');
  if (json) return json.value;
  return parts
    .filter((x) => x.type === 'text')
    .map((x) => String(x.value ?? ''))
    .join('');
}

export class EvaluatorService {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly deps: EvaluatorDeps,
  ) {}

  async create(
    p: Principal,
    input: { name: string; type: string; config?: Record<string, unknown>; description?: string },
  ): Promise<EvaluatorDto> {
    const s = scopeOf(p);
    const name = ScoreService.checkName(input.name.trim());
    this.checkDescription(input.description);
    const config = await checkConfig(input.type, input.config, this.deps.verdicts(p));
    if (await store.evaluatorNamed(this.db, s, name))
      throw new Conflict(
        `an evaluator named ${JSON.stringify(name)} exists: PUT /evaluators/:id makes its next version`,
      );
    const now = nowIso();
    const row: EvaluatorRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name,
      description: input.description ?? null,
      version: 1,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await store.saveVersion(this.db, this.dialect, row, { type: input.type, config }, true);
    return this.dto(row, { version: 1, type: input.type, config, created_by: row.created_by, created_at: now });
  }

  /** The next version: a new type and/or config (the current one's where not given). */
  async update(
    p: Principal,
    id: string,
    input: { type?: string; config?: Record<string, unknown> },
  ): Promise<EvaluatorDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    const current = (await store.getVersion(this.db, this.dialect, s, id, Number(row.version)))!;
    const type = input.type ?? current.type;
    if (input.type === undefined && input.config === undefined)
      throw new BadRequest('pass type and/or config: a new version needs a change');
    const config = await checkConfig(
      type,
      input.config ?? (input.type === undefined ? current.config : {}),
      this.deps.verdicts(p),
    );
    const now = nowIso();
    const next: EvaluatorRow = { ...row, version: Number(row.version) + 1, updated_by: actorOf(p), updated_at: now };
    await store.saveVersion(this.db, this.dialect, next, { type, config }, false);
    return this.dto(next, { version: next.version, type, config, created_by: next.updated_by, created_at: now });
  }

  async list(p: Principal, page: { limit?: number; offset?: number }): Promise<EvaluatorDto[]> {
    const s = scopeOf(p);
    const rows = await store.listEvaluators(this.db, s, {
      limit: Math.min(page.limit ?? 100, BOUNDS.pageLimit),
      offset: page.offset ?? 0,
    });
    return Promise.all(
      rows.map(async (r) => this.dto(r, (await store.getVersion(this.db, this.dialect, s, r.id, Number(r.version)))!)),
    );
  }

  async retrieve(p: Principal, id: string, version?: number): Promise<EvaluatorDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    return this.dto(row, await this.version(s, row, version));
  }

  async remove(p: Principal, id: string): Promise<{ id: string }> {
    if (!(await store.deleteEvaluator(this.db, scopeOf(p), id))) throw new NotFound('evaluator', id);
    return { id };
  }

  async exists(p: Principal, id: string): Promise<boolean> {
    return (await store.getEvaluator(this.db, scopeOf(p), id)) !== undefined;
  }

  /** Scores run `runId` with the evaluator (its current version unless given); `expected` from the caller. */
  async evaluateRun(
    p: Principal,
    id: string,
    input: { run: string; expected?: unknown; version?: number },
  ): Promise<Evaluation> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    const v = await this.version(s, row, input.version);
    const run = await this.deps.getRun(p, input.run);
    const candidate: Candidate = {
      input: (run.parameters as Record<string, unknown> | undefined) ?? {},
      output: outputOf(run),
      ...(input.expected !== undefined ? { expected: input.expected } : {}),
      run: { execution_time: run.execution_time ?? null, cost: run.cost?.total ?? null },
    };
    return this.judgeAndRecord(p, row, v, run.id, candidate);
  }

  /** The evaluator at a version (its current one unless given): experiments pin it, then score with it. */
  async at(p: Principal, id: string, version?: number): Promise<{ row: EvaluatorRow; version: VersionRow }> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    return { row, version: await this.version(s, row, version) };
  }

  /** A verdict recorded as a score on `run`, or the error that stopped it (experiments call this per run). */
  async judgeAndRecord(p: Principal, row: EvaluatorRow, v: VersionRow, run: string, c: Candidate): Promise<Evaluation> {
    const base = { evaluator: row.id, version: v.version };
    let result;
    try {
      result = await verdict(v.type as EvaluatorType, v.config, c, this.deps.verdicts(p));
    } catch (err) {
      if (err instanceof EvaluatorFailure) return { ...base, error: { message: err.message } };
      throw err;
    }
    const score = await this.deps.scores.record(scopeOf(p), actorOf(p), run, {
      name: row.name,
      value: result.score,
      source: 'evaluator',
      evaluator: row.id,
      ...(result.reason ? { comment: result.reason } : {}),
    });
    return { ...base, score, ...(result.reason ? { reason: result.reason } : {}) };
  }

  private async row(s: Scope, id: string): Promise<EvaluatorRow> {
    const row = await store.getEvaluator(this.db, s, id);
    if (!row) throw new NotFound('evaluator', id);
    return row;
  }

  private async version(s: Scope, row: EvaluatorRow, version?: number): Promise<VersionRow> {
    const current = Number(row.version);
    if (version !== undefined && (!Number.isInteger(version) || version < 1 || version > current))
      throw new BadRequest(`version is a whole number from 1 to ${current} (the evaluator's current version)`);
    return (await store.getVersion(this.db, this.dialect, s, row.id, version ?? current))!;
  }

  private checkDescription(d: string | undefined): void {
    if (d !== undefined && d.length > BOUNDS.descriptionChars)
      throw new BadRequest(`description is at most ${BOUNDS.descriptionChars} characters`);
  }

  private dto(r: EvaluatorRow, v: VersionRow): EvaluatorDto {
    return {
      id: r.id,
      name: r.name,
      ...(r.description ? { description: r.description } : {}),
      type: v.type,
      config: v.config,
      version: v.version,
      created_by: r.created_by,
      updated_by: v.created_by,
      created_at: r.created_at,
      updated_at: v.created_at,
    };
  }
}
