/**
 * Usage analytics (issue 18, point 5): the official client's `analytics` (run counts by status,
 * environment and interaction; runs per time bucket; tokens per environment) and `store.cost`
 * (cost per model, environment, interaction, provider, project or account and per time bucket;
 * the price catalog; the price of one run). Rules live here; runs/aggregates.ts holds the SQL.
 *
 * - Ranges are on the runs' `created_at`. `start`/`from` is inclusive; an `end`/`to` written as a
 *   date or date-time covers its precision (`end=2026-03-31` includes that day), as in run search;
 *   epoch milliseconds (cost views) are exact instants, exclusive.
 * - A range is at most 366 days and must not be empty; a bad date, a reversed or too long range,
 *   or an environment not of the project is a 400 (an unknown environment: 404).
 * - The run views count every run when no range is given; the time series and the cost views
 *   default to the 30 days before `end`/`to` (now when absent).
 * - Time buckets (UTC): hours when the range spans at most 72 hours, else days; the cost views
 *   accept `resolution` (hour, day, week, month) and refuse more than 10,000 buckets. Empty
 *   buckets are answered with zeros.
 * - Costs are the runs' recorded `cost.total` (USD, priced when the run ended from the
 *   environment's `config.prices` or the vendored LiteLLM table, src/pricing/). A run whose cost is
 *   unknown counts as a call with no cost (`pricing_coverage.unpriced_calls`), never as zero
 *   silently. Sums are rounded to 1e-9 USD, as each run's cost is.
 */
import type { Principal } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { bucketStart, floorToBucket, nextBucket, TIME_BUCKETS, type TimeBucket } from '../db/time-buckets.ts';
import { BadRequest, Forbidden, NotFound } from '../util/errors.ts';
import { parseDateInterval } from '../query/lucene/index.ts';
import { priceTable, tableEntry } from '../pricing/cost.ts';
import { RUN_STATUSES } from '../runs/model.ts';
import type { Db } from '../runs/store.ts';
import * as store from '../runs/aggregates.ts';
import { listProjects } from '../auth/reads.ts';

const MAX_RANGE_DAYS = 366;
const DAY = 86_400_000;
/** The instants a JavaScript Date holds. */
const MAX_EPOCH_MS = 8.64e15;
const DEFAULT_DAYS = 30;
/** Ranges up to this many hours are bucketed by hour, longer ones by day. */
const HOURLY_UP_TO_HOURS = 72;
const MAX_BUCKETS = 10_000;

/** The environments of the caller's project: enough to check an `environment` filter. */
export interface EnvironmentLookup {
  get(p: Principal, id: string): Promise<{ id: string; name: string }>;
}

interface EntityStatusCounts {
  id: string;
  name?: string;
  total: number | null;
  byStatus: Record<string, number | null>;
}

export interface RunsSummary {
  total: number | null;
  byStatus: Record<string, number | null>;
  byEnvironment: EntityStatusCounts[];
  byInteraction: EntityStatusCounts[];
  queryStats: { total: number; failed: number };
}

export interface TokenUsageSummary {
  byEnvironment: Array<{
    environmentId: string;
    environmentName: string;
    totalPromptTokens: number | null;
    totalResultTokens: number | null;
    totalTokens: number | null;
    runs: number;
    totalCost: number | null;
  }>;
  queryStats: { total: number; failed: number };
}

export interface DateRangeQuery {
  start?: string;
  end?: string;
  environment?: string;
}

interface Range {
  from?: number;
  to?: number;
}

const GROUPS = ['model', 'environment', 'interaction', 'provider', 'project', 'account'] as const;
type Group = (typeof GROUPS)[number];
const UNSUPPORTED_GROUPS = ['project_tag', 'service_tier', 'workflow'];
const GROUP_COLUMN: Record<Exclude<Group, 'provider'>, store.GroupColumn> = {
  model: 'model_id',
  environment: 'environment_id',
  interaction: 'interaction_id',
  project: 'project_id',
  account: 'account_id',
};

export interface CostQuery {
  from?: unknown;
  to?: unknown;
  group_by?: unknown;
  resolution?: unknown;
  model?: unknown;
  environment_id?: unknown;
  provider?: unknown;
  service_tier?: unknown;
  project_id?: unknown;
  interaction_id?: unknown;
  run_id?: unknown;
  workflow_id?: unknown;
  workflow_run_id?: unknown;
  agent_run_id?: unknown;
  principal_id?: unknown;
  scope?: unknown;
  pricing_source?: unknown;
  include_comparison_pricing?: unknown;
  [k: string]: unknown;
}

interface CostPoint {
  timestamp: string;
  cost: number;
  input_tokens: number;
  output_tokens: number;
  calls: number;
}

export interface CostByDimension {
  dimension: string;
  label?: string;
  provider?: string;
  cost: number;
  input_tokens: number;
  output_tokens: number;
  calls: number;
  periods?: CostPoint[];
}

interface ModelPricing {
  model: string;
  provider?: string;
  input_price_per_m_tokens: number;
  cached_input_price_per_m_tokens?: number;
  cache_write_input_price_per_m_tokens?: number;
  output_price_per_m_tokens: number;
  source: 'billing_export' | 'model_pricing_daily' | 'unavailable';
}

interface CostSummary {
  total_cost: number;
  total_input_tokens: number;
  total_output_tokens: number;
  total_calls: number;
  total_duration_ms: number;
}

interface PricingCoverage {
  priced_calls: number;
  unpriced_calls: number;
  assumed_default_calls: number;
  unpriced: Array<{ model: string; provider?: string; service_tier: string; calls: number }>;
}

const usd = (v: number) => Math.round(v * 1e9) / 1e9;
const perMillion = (perToken: number) => Number((perToken * 1e6).toPrecision(12));
const iso = (ms: number) => new Date(ms).toISOString();
const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';

export class AnalyticsService {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly environments: EnvironmentLookup,
  ) {}

  // ---- client.analytics ---------------------------------------------------------------------

  /** GET /analytics/runs/summary */
  async runsSummary(p: Principal, q: DateRangeQuery): Promise<RunsSummary> {
    const f = await this.runFilter(p, q, false);
    const rows = await store.statusCounts(this.db, this.dialect, f);
    const zero = () => Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<string, number>;
    const byStatus = zero();
    const envs = new Map<string, EntityStatusCounts & { total: number; byStatus: Record<string, number> }>();
    const ixs = new Map<string, EntityStatusCounts & { total: number; byStatus: Record<string, number> }>();
    const add = (m: typeof envs, id: string, name: string | null, status: string, n: number) => {
      let e = m.get(id);
      if (!e) m.set(id, (e = { id, ...(name ? { name } : {}), total: 0, byStatus: zero() }));
      e.total += n;
      e.byStatus[status] = (e.byStatus[status] ?? 0) + n;
    };
    let total = 0;
    for (const r of rows) {
      total += r.n;
      byStatus[r.status] = (byStatus[r.status] ?? 0) + r.n;
      if (r.environment_id !== null) add(envs, r.environment_id, r.environment_name, r.status, r.n);
      add(ixs, r.interaction_id, r.interaction_name, r.status, r.n);
    }
    const order = (a: EntityStatusCounts, b: EntityStatusCounts) =>
      (b.total ?? 0) - (a.total ?? 0) || (a.id < b.id ? -1 : 1);
    return {
      total,
      byStatus,
      byEnvironment: [...envs.values()].sort(order),
      byInteraction: [...ixs.values()].sort(order),
      queryStats: { total: 1, failed: 0 },
    };
  }

  /** GET /analytics/runs/time-series: `[{timestamp, count}]`, one per bucket of the range, empty ones included. */
  async runsTimeSeries(p: Principal, q: DateRangeQuery): Promise<Array<{ timestamp: string; count: number }>> {
    const f = await this.runFilter(p, q, true);
    const from = Date.parse(f.from!);
    const to = Date.parse(f.to!);
    const unit: TimeBucket = to - from <= HOURLY_UP_TO_HOURS * 3_600_000 ? 'hour' : 'day';
    const counts = new Map(
      (await store.bucketCounts(this.db, this.dialect, f, unit)).map((r) => [bucketStart(unit, r.bucket), r.n]),
    );
    return bucketsOf(unit, from, to).map((t) => ({ timestamp: t, count: counts.get(t) ?? 0 }));
  }

  /** GET /analytics/runs/token-usage */
  async runsTokenUsage(p: Principal, q: DateRangeQuery): Promise<TokenUsageSummary> {
    const f = await this.runFilter(p, q, false);
    const rows = await store.tokenSums(this.db, this.dialect, f);
    const byEnvironment = rows
      .filter((r) => r.environment_id !== null)
      .map((r) => ({
        environmentId: r.environment_id!,
        environmentName: r.environment_name ?? r.environment_id!,
        totalPromptTokens: r.prompt ?? 0,
        totalResultTokens: r.result ?? 0,
        totalTokens: r.total ?? 0,
        runs: r.runs,
        totalCost: r.cost === null ? null : usd(r.cost),
      }))
      .sort(
        (a, b) =>
          (b.totalPromptTokens ?? 0) - (a.totalPromptTokens ?? 0) || (a.environmentId < b.environmentId ? -1 : 1),
      );
    return { byEnvironment, queryStats: { total: 1, failed: 0 } };
  }

  // ---- store.cost ---------------------------------------------------------------------------

  /** POST /cost/analytics (the project, or with scope org the account: admin keys only). */
  analytics(p: Principal, q: CostQuery) {
    const scope = q.scope === undefined || q.scope === 'project' ? 'project' : q.scope === 'org' ? 'org' : null;
    if (scope === null) throw new BadRequest(`scope must be project or org, got ${JSON.stringify(q.scope)}`);
    if (scope === 'org' && p.role !== 'admin')
      throw new Forbidden('scope org (every project of the account) needs an admin key');
    return this.costAnalytics(p, q, scope === 'org' ? this.accountScope(p) : { project: p.project.id }, 'model');
  }

  /** POST /cost/analytics/global: every project of the caller's account, grouped by account unless asked. Admin keys only. */
  global(p: Principal, q: CostQuery) {
    if (p.role !== 'admin')
      throw new Forbidden('global cost analytics (every project of the account) need an admin key');
    return this.costAnalytics(p, q, this.accountScope(p), 'account');
  }

  /** Every project of the caller's account (auth's rows, asked of auth). */
  private async accountScope(p: Principal): Promise<store.AnalyticsScope> {
    return { projects: (await listProjects(this.db, p.account.id)).map((x) => x.id) };
  }

  /** GET /cost/model-prices: the vendored price table, USD per million tokens. */
  modelPrices(q: { from?: unknown; to?: unknown }) {
    const { from, to } = costRange(q.from, q.to);
    const header = priceTable().header;
    const prices = Object.entries(priceTable().models).map(([model, e]) => {
      const list = {
        input: perMillion(e.input_cost_per_token),
        output: perMillion(e.output_cost_per_token),
        ...(e.cache_read_input_token_cost !== undefined ? { cached: perMillion(e.cache_read_input_token_cost) } : {}),
        ...(e.cache_creation_input_token_cost !== undefined
          ? { write: perMillion(e.cache_creation_input_token_cost) }
          : {}),
      };
      return {
        model,
        provider: e.litellm_provider,
        list_price_date: header.date,
        effective_from: iso(from),
        effective_to: iso(to),
        input_list_price_per_m_tokens: list.input,
        input_effective_price_per_m_tokens: list.input,
        ...(list.cached !== undefined
          ? {
              cached_input_list_price_per_m_tokens: list.cached,
              cached_input_effective_price_per_m_tokens: list.cached,
            }
          : {}),
        ...(list.write !== undefined
          ? {
              cache_write_input_list_price_per_m_tokens: list.write,
              cache_write_input_effective_price_per_m_tokens: list.write,
            }
          : {}),
        output_list_price_per_m_tokens: list.output,
        output_effective_price_per_m_tokens: list.output,
        source: 'model_pricing_daily' as const,
      };
    });
    return { prices, effective_range: { from: iso(from), to: iso(to) }, list_price_date: header.date };
  }

  /** POST /cost/run-price: a run (with its children) priced by model; with include_comparison_pricing, the whole catalog too. */
  async runPrice(p: Principal, q: CostQuery) {
    if (!isText(q.run_id)) {
      if (isText(q.agent_run_id) || isText(q.workflow_id) || isText(q.workflow_run_id)) {
        throw new BadRequest('Orrery has no agent or workflow runs: price an interaction run with run_id');
      }
      throw new BadRequest('run_id is required');
    }
    if (q.scope !== undefined && q.scope !== 'project')
      throw new BadRequest("run-price answers for a run of the caller's project: scope must be project");
    const source = q.pricing_source === undefined ? 'historical' : q.pricing_source;
    if (source !== 'historical' && source !== 'list')
      throw new BadRequest(`pricing_source must be list or historical, got ${JSON.stringify(q.pricing_source)}`);
    if (q.include_comparison_pricing !== undefined && typeof q.include_comparison_pricing !== 'boolean')
      throw new BadRequest('include_comparison_pricing must be a boolean');
    const scope = { project: p.project.id };
    if (!(await store.runExists(this.db, scope, q.run_id))) throw new NotFound('run', q.run_id);
    // A range is optional here: without one every run of the tree counts.
    const hasRange = q.from !== undefined || q.to !== undefined;
    const range = hasRange ? costRange(q.from, q.to) : undefined;
    const f: store.RunFilter = { scope, run: q.run_id, ...(range ? { from: iso(range.from), to: iso(range.to) } : {}) };
    const rows = await store.costRows(this.db, this.dialect, f, 'model_id', null, true);
    const providers = await store.providersOf(
      this.db,
      this.dialect,
      scope,
      distinct(rows.map((r) => r.environment_id)),
    );
    const byModel = this.dimensions(rows, 'model', providers, null, [], null);
    const summary = summaryOf(rows);
    return {
      summary,
      by_model: byModel,
      pricing: q.include_comparison_pricing === true ? catalog() : pricingOf(rows, providers),
      pricing_coverage: coverageOf(rows, providers),
      ...(range ? { query_range: { from: iso(range.from), to: iso(range.to) } } : {}),
      // Each run's cost was priced when it ended (historical); Orrery's list prices are that same dated table.
      pricing_source: source as 'historical' | 'list',
      matched_events: summary.total_calls,
    };
  }

  private async costAnalytics(
    p: Principal,
    q: CostQuery,
    scoped: store.AnalyticsScope | Promise<store.AnalyticsScope>,
    defaultGroup: Group,
  ) {
    const scope = await scoped;
    const group = (q.group_by ?? defaultGroup) as Group;
    if (typeof group !== 'string' || !(GROUPS as readonly string[]).includes(group)) {
      throw new BadRequest(
        UNSUPPORTED_GROUPS.includes(group as string)
          ? `group_by ${group} is not tracked by Orrery; group by ${GROUPS.join(', ')}`
          : `group_by must be one of ${GROUPS.join(', ')}, got ${JSON.stringify(q.group_by)}`,
      );
    }
    for (const k of ['workflow_id', 'workflow_run_id', 'agent_run_id', 'service_tier'] as const) {
      if (q[k] !== undefined && typeof q[k] !== 'string') throw new BadRequest(`${k} must be a string`);
    }
    const { from, to } = costRange(q.from, q.to);
    const unit = resolutionOf(q.resolution, from, to);
    if ('project' in scope && q.project_id !== undefined && q.project_id !== p.project.id) {
      throw new Forbidden('project_id names another project: only scope org (admin keys) reads other projects');
    }
    const filters = {
      model: optionalText(q.model, 'model'),
      environment: optionalText(q.environment_id, 'environment_id'),
      interaction: optionalText(q.interaction_id, 'interaction_id'),
      project: 'account' in scope ? optionalText(q.project_id, 'project_id') : undefined,
      run: optionalText(q.run_id, 'run_id'),
      // A bare API key id, or Vertesia's `…:<id>` form (matched on the id).
      principal: optionalText(q.principal_id, 'principal_id')?.replace(/^.*:/, ''),
    };
    const provider = optionalText(q.provider, 'provider');
    if (filters.environment && 'project' in scope) await this.environments.get(p, filters.environment);
    const f: store.RunFilter = { scope, from: iso(from), to: iso(to), ...withoutUndefined(filters) };
    // Orrery runs belong to no workflow or agent run: those filters match nothing.
    // Every Orrery run is of the default service tier.
    const none =
      [q.workflow_id, q.workflow_run_id, q.agent_run_id].some(isText) ||
      (isText(q.service_tier) && q.service_tier !== 'default');
    let rows = none
      ? []
      : await store.costRows(
          this.db,
          this.dialect,
          f,
          group === 'provider' ? 'environment_id' : GROUP_COLUMN[group],
          unit,
          true,
        );
    const providers = await store.providersOf(
      this.db,
      this.dialect,
      scope,
      distinct(rows.map((r) => r.environment_id)),
    );
    if (provider !== undefined)
      rows = rows.filter((r) => r.environment_id !== null && providers.get(r.environment_id) === provider);
    // Models' prices need the model of each row: a second, small aggregate when grouping by something else.
    const modelRows =
      group === 'model'
        ? rows
        : none
          ? []
          : (await store.costRows(this.db, this.dialect, f, 'model_id', null, true)).filter(
              (r) =>
                provider === undefined || (r.environment_id !== null && providers.get(r.environment_id) === provider),
            );
    const labels =
      group === 'account'
        ? new Map([[p.account.id, p.account.name]])
        : group === 'project'
          ? new Map([[p.project.id, p.project.name]])
          : null;
    return {
      summary: summaryOf(rows),
      by_dimension: this.dimensions(rows, group, providers, unit, bucketsOf(unit, from, to), labels),
      time_series: seriesOf(rows, unit, bucketsOf(unit, from, to)),
      pricing: pricingOf(modelRows, providers),
      pricing_coverage: coverageOf(modelRows, providers),
      query_range: { from: iso(from), to: iso(to) },
      cached: false,
    };
  }

  /** Rows merged per dimension value (provider: through the environment), most costly first. */
  private dimensions(
    rows: store.CostRow[],
    group: Group,
    providers: Map<string, string>,
    unit: TimeBucket | null,
    buckets: string[],
    labels: Map<string, string> | null,
  ): CostByDimension[] {
    const by = new Map<string, { d: CostByDimension; rows: store.CostRow[]; providers: Set<string> }>();
    for (const r of rows) {
      const key =
        group === 'provider'
          ? r.environment_id !== null
            ? (providers.get(r.environment_id) ?? 'unknown')
            : 'unknown'
          : (r.key ?? 'unknown');
      let e = by.get(key);
      if (!e) {
        const label = group === 'provider' ? undefined : (labels?.get(key) ?? r.label ?? undefined);
        by.set(
          key,
          (e = {
            d: { dimension: key, ...(label ? { label } : {}), cost: 0, input_tokens: 0, output_tokens: 0, calls: 0 },
            rows: [],
            providers: new Set(),
          }),
        );
      }
      e.d.cost += r.cost;
      e.d.input_tokens += r.input;
      e.d.output_tokens += r.output;
      e.d.calls += r.calls;
      e.rows.push(r);
      if (r.environment_id !== null && providers.has(r.environment_id))
        e.providers.add(providers.get(r.environment_id)!);
    }
    return [...by.values()]
      .map(({ d, rows: rs, providers: ps }) => ({
        ...d,
        cost: usd(d.cost),
        // The provider of a model (or an environment) when it is one.
        ...(group !== 'provider' && ps.size === 1 ? { provider: [...ps][0] } : {}),
        ...(unit ? { periods: seriesOf(rs, unit, buckets) } : {}),
      }))
      .sort((a, b) => b.cost - a.cost || b.calls - a.calls || (a.dimension < b.dimension ? -1 : 1));
  }

  /** The filter of the run views: the project, the range and the environment (checked to be of the project). */
  private async runFilter(p: Principal, q: DateRangeQuery, bounded: boolean): Promise<store.RunFilter> {
    const range = runRange(q, bounded);
    if (q.environment !== undefined && q.environment !== '') await this.environments.get(p, q.environment);
    return {
      scope: { project: p.project.id },
      ...(range.from !== undefined ? { from: iso(range.from) } : {}),
      ...(range.to !== undefined ? { to: iso(range.to) } : {}),
      ...(q.environment ? { environment: q.environment } : {}),
    };
  }
}

// ---- ranges and buckets ---------------------------------------------------------------------

function interval(value: unknown, what: string) {
  const span = typeof value === 'string' ? parseDateInterval(value.trim()) : null;
  if (span === null)
    throw new BadRequest(`${what} must be an ISO 8601 date or date-time, got ${JSON.stringify(value)}`);
  return span;
}

function checkRange(from: number, to: number, names: [string, string]): void {
  if (Math.abs(from) > MAX_EPOCH_MS || Math.abs(to) > MAX_EPOCH_MS)
    throw new BadRequest(`${names[0]} and ${names[1]} must be dates between the years -271821 and 275760`);
  if (!(from < to)) throw new BadRequest(`${names[0]} must come before ${names[1]}`);
  if (to - from > MAX_RANGE_DAYS * DAY) {
    throw new BadRequest(
      `the range from ${names[0]} to ${names[1]} spans ${Math.ceil((to - from) / DAY)} days; at most ${MAX_RANGE_DAYS}`,
    );
  }
}

/** `start`/`end` of the run views; bounded: the time series needs both (default: the 30 days before end, end = now). */
function runRange(q: DateRangeQuery, bounded: boolean): Range {
  const hasStart = q.start !== undefined && q.start !== '';
  const hasEnd = q.end !== undefined && q.end !== '';
  let from = hasStart ? interval(q.start, 'start').from : undefined;
  let to = hasEnd ? interval(q.end, 'end').to : undefined;
  if (bounded) {
    to ??= Date.now();
    from ??= to - DEFAULT_DAYS * DAY;
  }
  if (from !== undefined && to !== undefined) checkRange(from, to, ['start', 'end']);
  return { from, to };
}

/** `from`/`to` of the cost views: ISO 8601 or epoch ms; default the 30 days before `to` (now). */
function costRange(fromValue: unknown, toValue: unknown): { from: number; to: number } {
  const instant = (v: unknown, what: string, end: boolean): number | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v === 'number') {
      if (!Number.isInteger(v) || Math.abs(v) > MAX_EPOCH_MS)
        throw new BadRequest(`${what} must be an ISO 8601 date or epoch milliseconds, got ${v}`);
      return v;
    }
    // Epoch milliseconds may come as text (a query string): 10 digits or more is never a year.
    if (typeof v === 'string' && /^\d{10,}$/.test(v.trim())) return instant(Number(v.trim()), what, end);
    const span = interval(v, what);
    return end ? span.to : span.from;
  };
  const to = instant(toValue, 'to', true) ?? Date.now();
  const from = instant(fromValue, 'from', false) ?? to - DEFAULT_DAYS * DAY;
  checkRange(from, to, ['from', 'to']);
  return { from, to };
}

function resolutionOf(value: unknown, from: number, to: number): TimeBucket {
  if (value === undefined || value === null) return to - from <= HOURLY_UP_TO_HOURS * 3_600_000 ? 'hour' : 'day';
  if (typeof value !== 'string' || !(TIME_BUCKETS as readonly string[]).includes(value)) {
    throw new BadRequest(`resolution must be one of ${TIME_BUCKETS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  const unit = value as TimeBucket;
  if (bucketsOf(unit, from, to, MAX_BUCKETS + 1).length > MAX_BUCKETS)
    throw new BadRequest(`resolution ${unit} gives more than ${MAX_BUCKETS} buckets over this range`);
  return unit;
}

/** The starts of the buckets that meet [from, to), as ISO instants. */
function bucketsOf(unit: TimeBucket, from: number, to: number, cap = Infinity): string[] {
  const out: string[] = [];
  for (let t = floorToBucket(unit, from); t < to && out.length < cap; t = nextBucket(unit, t)) out.push(iso(t));
  return out;
}

// ---- answers --------------------------------------------------------------------------------

function seriesOf(rows: store.CostRow[], unit: TimeBucket | null, buckets: string[]): CostPoint[] {
  if (!unit) return [];
  const by = new Map(buckets.map((t) => [t, { timestamp: t, cost: 0, input_tokens: 0, output_tokens: 0, calls: 0 }]));
  for (const r of rows) {
    if (r.bucket === null) continue;
    const t = bucketStart(unit, r.bucket);
    let pt = by.get(t);
    if (!pt) by.set(t, (pt = { timestamp: t, cost: 0, input_tokens: 0, output_tokens: 0, calls: 0 }));
    pt.cost += r.cost;
    pt.input_tokens += r.input;
    pt.output_tokens += r.output;
    pt.calls += r.calls;
  }
  return [...by.values()]
    .map((pt) => ({ ...pt, cost: usd(pt.cost) }))
    .sort((a, b) => (a.timestamp < b.timestamp ? -1 : 1));
}

function summaryOf(rows: store.CostRow[]): CostSummary {
  const s = { total_cost: 0, total_input_tokens: 0, total_output_tokens: 0, total_calls: 0, total_duration_ms: 0 };
  for (const r of rows) {
    s.total_cost += r.cost;
    s.total_input_tokens += r.input;
    s.total_output_tokens += r.output;
    s.total_calls += r.calls;
    s.total_duration_ms += r.duration;
  }
  return { ...s, total_cost: usd(s.total_cost) };
}

/** The list price of one provider's model in the vendored table, USD per million tokens; `unavailable` when it has none. */
function priceOf(model: string, provider: string | undefined): ModelPricing {
  const e = provider ? tableEntry(provider, model) : undefined;
  if (!e)
    return {
      model,
      ...(provider ? { provider } : {}),
      input_price_per_m_tokens: 0,
      output_price_per_m_tokens: 0,
      source: 'unavailable',
    };
  return {
    model,
    ...(provider ? { provider } : {}),
    input_price_per_m_tokens: perMillion(e.input_cost_per_token),
    ...(e.cache_read_input_token_cost !== undefined
      ? { cached_input_price_per_m_tokens: perMillion(e.cache_read_input_token_cost) }
      : {}),
    ...(e.cache_creation_input_token_cost !== undefined
      ? { cache_write_input_price_per_m_tokens: perMillion(e.cache_creation_input_token_cost) }
      : {}),
    output_price_per_m_tokens: perMillion(e.output_cost_per_token),
    source: 'model_pricing_daily',
  };
}

/** Rows grouped by model (with environments): the distinct (provider, model) pairs. */
function modelPairs(rows: store.CostRow[], providers: Map<string, string>) {
  const pairs = new Map<string, { model: string; provider?: string; calls: number; priced: number }>();
  for (const r of rows) {
    if (r.key === null) continue;
    const provider = r.environment_id !== null ? providers.get(r.environment_id) : undefined;
    const k = `${provider ?? ''}\u0000${r.key}`;
    let e = pairs.get(k);
    if (!e) pairs.set(k, (e = { model: r.key, ...(provider ? { provider } : {}), calls: 0, priced: 0 }));
    e.calls += r.calls;
    e.priced += r.priced;
  }
  return [...pairs.values()].sort((a, b) =>
    a.model < b.model ? -1 : a.model > b.model ? 1 : (a.provider ?? '') < (b.provider ?? '') ? -1 : 1,
  );
}

function pricingOf(rows: store.CostRow[], providers: Map<string, string>): ModelPricing[] {
  return modelPairs(rows, providers).map((m) => priceOf(m.model, m.provider));
}

function coverageOf(rows: store.CostRow[], providers: Map<string, string>): PricingCoverage {
  let priced = 0;
  let calls = 0;
  for (const r of rows) {
    priced += r.priced;
    calls += r.calls;
  }
  const unpriced = modelPairs(rows, providers)
    .filter((m) => m.calls > m.priced)
    .map((m) => ({
      model: m.model,
      ...(m.provider ? { provider: m.provider } : {}),
      service_tier: 'default',
      calls: m.calls - m.priced,
    }));
  return { priced_calls: priced, unpriced_calls: calls - priced, assumed_default_calls: 0, unpriced };
}

/** The whole vendored table as ModelPricing (getRunPriceComparison). */
function catalog(): ModelPricing[] {
  return Object.entries(priceTable().models).map(([model, e]) => ({
    model,
    provider: e.litellm_provider,
    input_price_per_m_tokens: perMillion(e.input_cost_per_token),
    ...(e.cache_read_input_token_cost !== undefined
      ? { cached_input_price_per_m_tokens: perMillion(e.cache_read_input_token_cost) }
      : {}),
    ...(e.cache_creation_input_token_cost !== undefined
      ? { cache_write_input_price_per_m_tokens: perMillion(e.cache_creation_input_token_cost) }
      : {}),
    output_price_per_m_tokens: perMillion(e.output_cost_per_token),
    source: 'model_pricing_daily' as const,
  }));
}

function optionalText(v: unknown, what: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new BadRequest(`${what} must be a string`);
  return v;
}

const distinct = (xs: (string | null)[]) => [...new Set(xs.filter((x): x is string => x !== null))];
const withoutUndefined = <T extends Record<string, unknown>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
