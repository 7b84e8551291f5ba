/**
 * Reading the audit trail: `GET /audit-trail` (filters and pages, newest first) and
 * `POST /audit-trail/aggregate` (counts grouped by time and dimensions), in the shapes of the
 * official client's `auditTrail` API. An admin key reads its whole account (or one project of
 * it); every other key only its own project.
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Principal } from '../auth/principal.ts';
import { BadRequest } from '../util/errors.ts';
import { isoDate } from '../http/query.ts';
import { setOwn } from '../util/own.ts';

export const MAX_AUDIT_PAGE = 1000;
const DEFAULT_AUDIT_PAGE = 100;
export const MAX_AGGREGATE_GROUPS = 200;
export const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;

export interface AuditListQuery {
  actions?: string[];
  resourceTypes?: string[];
  resourceId?: string;
  principalId?: string;
  principalType?: string;
  effectivePrincipalId?: string;
  hasEffectivePrincipal?: boolean;
  projectId?: string;
  from?: string;
  to?: string;
  limit?: number;
  offset?: number;
}

export interface AggregateQuery {
  projectId?: string;
  from?: string;
  to?: string;
  filter?: {
    actions?: string[];
    resourceTypes?: string[];
    eventCategories?: string[];
    providers?: string[];
    success?: boolean;
    details?: unknown[];
  };
  groupBy?: Array<{ dimension: string; resolution?: 'hour' | 'day' | 'week' | 'month' }>;
  metrics: Array<{
    id: string;
    operation: 'count' | 'count_distinct' | 'sum_meter' | 'average_meter';
    field?: 'resource_id' | 'request_id';
    meterCategory?: string;
    meterType?: string;
  }>;
  limit?: number;
}

type Eb = ExpressionBuilder<Database, 'audit_events'>;

/** Dimensions with a column; the others (provider, model, details.*) are null on every event Orrery writes. */
const DIMENSION_COLUMNS: Record<string, 'action' | 'resource_type' | 'event_category' | 'project_id'> = {
  action: 'action',
  resource_type: 'resource_type',
  event_category: 'event_category',
  project_id: 'project_id',
};
const NULL_DIMENSIONS = new Set([
  'provider',
  'model',
  'details.pipeline',
  'details.verdict',
  'details.workflow_type',
  'details.rule_id',
]);

export class AuditTrail {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
  ) {}

  async list(
    p: Principal,
    q: AuditListQuery,
  ): Promise<{ events: Record<string, unknown>[]; hasNext: boolean; limit: number; offset: number }> {
    const limit = q.limit ?? DEFAULT_AUDIT_PAGE;
    const offset = q.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE)
      throw new BadRequest(`limit must be 1 to ${MAX_AUDIT_PAGE}`);
    // No event of Orrery's has an effective principal other than its own.
    if (q.effectivePrincipalId !== undefined || q.hasEffectivePrincipal === true)
      return { events: [], hasNext: false, limit, offset };
    const rows = await this.db
      .selectFrom('audit_events')
      .selectAll()
      .where((eb) => this.scope(eb, p, q.projectId))
      .where((eb) =>
        eb.and([
          ...(q.actions?.length ? [eb('action', 'in', q.actions)] : []),
          ...(q.resourceTypes?.length ? [eb('resource_type', 'in', q.resourceTypes)] : []),
          ...(q.resourceId ? [eb('resource_id', '=', q.resourceId)] : []),
          ...(q.principalId ? [eb('principal_id', '=', q.principalId)] : []),
          ...(q.principalType ? [eb('principal_type', '=', q.principalType)] : []),
          ...(q.from ? [eb('created_at', '>=', isoDate('from', q.from))] : []),
          ...(q.to ? [eb('created_at', '<=', isoDate('to', q.to))] : []),
        ]),
      )
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .offset(offset)
      .execute();
    return { events: rows.slice(0, limit).map((r) => this.toEvent(r)), hasNext: rows.length > limit, limit, offset };
  }

  async aggregate(
    p: Principal,
    q: AggregateQuery,
  ): Promise<{
    rows: Array<{ dimensions: Record<string, unknown>; metrics: Record<string, number> }>;
    from: string;
    to: string;
  }> {
    const to = q.to ? new Date(isoDate('to', q.to)) : new Date();
    const from = q.from ? new Date(isoDate('from', q.from)) : new Date(to.getTime() - 30 * DAY_MS);
    if (from > to) throw new BadRequest('from must be before to');
    if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS)
      throw new BadRequest(`the range may span at most ${MAX_RANGE_DAYS} days`);
    const limit = q.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AGGREGATE_GROUPS)
      throw new BadRequest(`limit must be 1 to ${MAX_AGGREGATE_GROUPS}`);
    const metrics = checkedMetrics(q.metrics);
    const groups = checkedGroups(q.groupBy ?? []);
    const f = q.filter ?? {};
    const nothing = (f.providers?.length ?? 0) > 0 || (f.details?.length ?? 0) > 0 || f.success === false;

    const time = groups.find((g) => g.dimension === 'time');
    // Weeks are folded from days here; the other resolutions are a prefix of the ISO timestamp.
    const prefix = time ? { hour: 13, day: 10, week: 10, month: 7 }[time.resolution ?? 'day'] : 0;
    const selections: ReturnType<typeof sql>[] = [];
    const groupExprs: ReturnType<typeof sql>[] = [];
    if (time) {
      selections.push(sql`substr(created_at, 1, ${sql.lit(prefix)}) as g_time`);
      groupExprs.push(sql`substr(created_at, 1, ${sql.lit(prefix)})`);
    }
    for (const g of groups) {
      const column = DIMENSION_COLUMNS[g.dimension];
      if (!column) continue;
      selections.push(sql`${sql.ref(column)} as ${sql.ref(`g_${column}`)}`);
      groupExprs.push(sql.ref(column));
    }
    for (const m of metrics) {
      const value =
        m.operation === 'count'
          ? sql`count(*)`
          : m.operation === 'count_distinct'
            ? sql`count(distinct ${sql.ref(m.field!)})`
            : sql`0`; // Orrery's events carry no meters.
      selections.push(sql`${value} as ${sql.ref(`m_${m.index}`)}`);
    }
    if (nothing) return { rows: [], from: from.toISOString(), to: to.toISOString() };
    let query = this.db
      .selectFrom('audit_events')
      .select(selections as never)
      .where((eb) => this.scope(eb, p, q.projectId))
      .where('created_at', '>=', from.toISOString())
      .where('created_at', '<=', to.toISOString())
      .where((eb) =>
        eb.and([
          ...(f.actions?.length ? [eb('action', 'in', f.actions)] : []),
          ...(f.resourceTypes?.length ? [eb('resource_type', 'in', f.resourceTypes)] : []),
          ...(f.eventCategories?.length ? [eb('event_category', 'in', f.eventCategories)] : []),
        ]),
      );
    if (groupExprs.length) query = query.groupBy(groupExprs as never);
    // Every group of the range for weeks (folded below), else the first `limit` groups.
    const raw = (await query.limit(time?.resolution === 'week' ? MAX_RANGE_DAYS * 1000 : 10_000).execute()) as Record<
      string,
      unknown
    >[];

    const rows = new Map<string, { dimensions: Record<string, unknown>; metrics: Record<string, number> }>();
    for (const r of raw) {
      const dimensions: Record<string, unknown> = {};
      for (const g of groups) {
        if (g.dimension === 'time')
          setOwn(dimensions, 'time', bucketStart(String(r.g_time), time!.resolution ?? 'day'));
        else if (NULL_DIMENSIONS.has(g.dimension)) setOwn(dimensions, g.dimension, null);
        else setOwn(dimensions, g.dimension, r[`g_${DIMENSION_COLUMNS[g.dimension]}`] ?? null);
      }
      const key = JSON.stringify(dimensions);
      const row = rows.get(key) ?? { dimensions, metrics: Object.fromEntries(metrics.map((m) => [m.id, 0])) };
      for (const m of metrics) setOwn(row.metrics, m.id, (row.metrics[m.id] ?? 0) + Number(r[`m_${m.index}`] ?? 0));
      rows.set(key, row);
    }
    const out = [...rows.values()];
    const first = metrics[0].id;
    out.sort(
      (a, b) =>
        (time ? String(a.dimensions.time).localeCompare(String(b.dimensions.time)) : 0) ||
        b.metrics[first] - a.metrics[first],
    );
    return { rows: out.slice(0, limit), from: from.toISOString(), to: to.toISOString() };
  }

  /** The account for an admin (one project of it with `projectId`); the key's project otherwise. */
  private scope(eb: Eb, p: Principal, projectId?: string): Expression<SqlBool> {
    const account = eb('account_id', '=', p.account.id);
    if (p.role !== 'admin') return eb.and([account, eb('project_id', '=', p.project.id)]);
    return projectId ? eb.and([account, eb('project_id', '=', projectId)]) : account;
  }

  private toEvent(r: Record<string, unknown>): Record<string, unknown> {
    const details = (this.dialect.fromJson(r.details) as Record<string, unknown> | null) ?? {};
    return {
      event_type: 'audit',
      event_id: r.id,
      event_category: r.event_category,
      source: 'orrery',
      action: r.action,
      resource_type: r.resource_type,
      resource_id: r.resource_id,
      timestamp: r.created_at,
      request_id: r.request_id ?? '',
      status: 200,
      success: true,
      principal_id: r.principal_id,
      principal_type: r.principal_type,
      effective_principal_id: null,
      roles: [r.role],
      account_id: r.account_id,
      project_id: r.project_id ?? null,
      tenant_id: null,
      account_name: null,
      project_name: null,
      details: { ...details, ...(r.ip ? { ip: r.ip } : {}) },
    };
  }
}

function checkedMetrics(
  metrics: AggregateQuery['metrics'],
): Array<AggregateQuery['metrics'][number] & { index: number }> {
  if (!Array.isArray(metrics) || !metrics.length || metrics.length > 10)
    throw new BadRequest('metrics must list 1 to 10 metrics {id, operation}');
  const ids = new Set<string>();
  return metrics.map((m, index) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(m.id ?? ''))
      throw new BadRequest(`metrics[${index}].id must be 1-64 letters, digits, "_" or "-"`);
    if (ids.has(m.id)) throw new BadRequest(`metrics[${index}].id ${m.id} is used twice`);
    ids.add(m.id);
    if (m.operation === 'count_distinct' && m.field !== 'resource_id' && m.field !== 'request_id')
      throw new BadRequest(`metrics[${index}]: count_distinct needs field resource_id or request_id`);
    if ((m.operation === 'sum_meter' || m.operation === 'average_meter') && (!m.meterCategory || !m.meterType))
      throw new BadRequest(`metrics[${index}]: ${m.operation} needs meterCategory and meterType`);
    return { ...m, index };
  });
}

function checkedGroups(groups: NonNullable<AggregateQuery['groupBy']>): NonNullable<AggregateQuery['groupBy']> {
  if (groups.length > 4) throw new BadRequest('groupBy may name at most 4 dimensions');
  const seen = new Set<string>();
  for (const [i, g] of groups.entries()) {
    if (!DIMENSION_COLUMNS[g.dimension] && !NULL_DIMENSIONS.has(g.dimension) && g.dimension !== 'time') {
      throw new BadRequest(
        `groupBy[${i}].dimension must be one of time, ${[...Object.keys(DIMENSION_COLUMNS), ...NULL_DIMENSIONS].join(', ')}`,
      );
    }
    if (seen.has(g.dimension)) throw new BadRequest(`groupBy[${i}]: ${g.dimension} is named twice`);
    seen.add(g.dimension);
  }
  return groups;
}

/** The ISO start of the bucket an ISO prefix (hour, day or month) falls in; weeks start on Monday. */
function bucketStart(prefix: string, resolution: 'hour' | 'day' | 'week' | 'month'): string {
  if (resolution === 'hour') return `${prefix}:00:00.000Z`;
  if (resolution === 'month') return `${prefix}-01T00:00:00.000Z`;
  const day = new Date(`${prefix}T00:00:00.000Z`);
  if (resolution === 'week') day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day.toISOString();
}
