/**
 * Webhook subscriptions of a project (`store.events.subscriptions`): Vertesia's payloads, each
 * field applied or refused by name. A subscription's secret is answered once, at its creation
 * (and at a rotation), and kept encrypted with the server's key.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { roleWithin } from '../auth/permissions.ts';
import { encrypt } from '../auth/secret.ts';
import { BadRequest, Conflict, Forbidden, NotFound } from '../util/errors.ts';
import { checkEndpointLiteral, EgressRefused, type EgressPolicy } from '../providers/egress.ts';
import { RUN_AS_ROLES, type EventFilter } from './model.ts';
import { newSigningSecret } from './signing.ts';
import { MAX_SUBSCRIPTIONS } from './schemas.ts';
import * as store from './store.ts';

export interface SubscriptionDto {
  id: string;
  name: string;
  description?: string;
  account_id: string;
  project_id: string;
  scope: 'project';
  filter: EventFilter;
  target: { type: 'webhook'; url: string; has_secret: true; signing_mode: 'signed'; payload_mode: 'event_envelope' };
  run_as_role: string;
  is_system: false;
  protected: false;
  enabled: boolean;
  created_by?: string;
  created_at: string;
  updated_at: string;
}

export interface Mutation {
  subscription: SubscriptionDto;
  webhook_signing_secret?: string;
}

type Body = Record<string, unknown>;

const CREATE_FIELDS = new Set([
  'name',
  'description',
  'scope',
  'filter',
  'target',
  'run_as_role',
  'enabled',
  'priority',
]);
const TARGET_FIELDS = new Set([
  'type',
  'url',
  'signing_mode',
  'payload_mode',
  'rotate_signing_secret',
  'has_secret',
  'secret_label',
]);

export class Subscriptions {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly key: Buffer,
    private readonly egress: EgressPolicy,
  ) {}

  async create(p: Principal, body: Body): Promise<Mutation> {
    checkFields(body, CREATE_FIELDS, 'an event subscription');
    if (body.scope !== undefined && body.scope !== 'project')
      throw new BadRequest(`scope ${JSON.stringify(body.scope)} is not supported: subscriptions are per project`);
    const s = scopeOf(p);
    const count = (await store.listSubscriptions(this.db, s, { sortBy: 'name', order: 'asc' })).length;
    if (count >= MAX_SUBSCRIPTIONS)
      throw new Conflict(`the project has ${MAX_SUBSCRIPTIONS} event subscriptions, the most it may: delete one first`);
    const target = this.target(body.target as Body, false);
    const secret = newSigningSecret();
    const now = nowIso();
    const row: store.SubscriptionRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name: body.name as string,
      description: (body.description as string | undefined) ?? null,
      filter: this.dialect.toJson(filterOf(body.filter as Body)),
      url: target.url,
      secret: encrypt(this.key, secret),
      run_as_role: runAsRole(p, body.run_as_role),
      enabled: body.enabled === false ? 0 : 1,
      created_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    priorityOf(body.priority);
    await store.insertSubscription(this.db, row);
    // Read back: the answer is what is stored (JSON as the database gives it back).
    return { subscription: this.dto(await this.row(p, row.id)), webhook_signing_secret: secret };
  }

  async list(p: Principal, q: Record<string, string | undefined>): Promise<SubscriptionDto[]> {
    for (const [key, only] of [
      ['target_type', 'webhook'],
      ['scope', 'project'],
    ] as const) {
      const asked = q[key]?.split(',').filter(Boolean) ?? [];
      // Every subscription is a project's webhook: asking for another kind finds none.
      if (asked.length && !asked.includes(only)) return [];
    }
    const rows = await store.listSubscriptions(this.db, scopeOf(p), {
      ...(q.enabled !== undefined ? { enabled: q.enabled === 'true' } : {}),
      sortBy: (q.sort_by as 'name' | 'updated_at' | 'enabled' | undefined) ?? 'name',
      order: (q.sort_order as 'asc' | 'desc' | undefined) ?? 'asc',
    });
    return rows.map((r) => this.dto(r));
  }

  async get(p: Principal, id: string): Promise<SubscriptionDto> {
    return this.dto(await this.row(p, id));
  }

  async update(p: Principal, id: string, body: Body): Promise<Mutation> {
    checkFields(body, new Set([...CREATE_FIELDS].filter((f) => f !== 'scope')), 'an event subscription update');
    const before = await this.row(p, id);
    const set: Parameters<typeof store.updateSubscription>[3] = {};
    let secret: string | undefined;
    if (body.name !== undefined) set.name = body.name as string;
    if (body.description !== undefined) set.description = body.description as string;
    if (body.filter !== undefined) set.filter = this.dialect.toJson(filterOf(body.filter as Body));
    if (body.run_as_role !== undefined) set.run_as_role = runAsRole(p, body.run_as_role);
    if (body.enabled !== undefined) set.enabled = body.enabled ? 1 : 0;
    priorityOf(body.priority);
    if (body.target !== undefined) {
      const target = this.target(body.target as Body, true);
      set.url = target.url;
      if (target.rotate) {
        secret = newSigningSecret();
        set.secret = encrypt(this.key, secret);
      }
    }
    if (!(await store.updateSubscription(this.db, scopeOf(p), before.id, set)))
      throw new NotFound('event subscription', id);
    const after = await this.row(p, id);
    return { subscription: this.dto(after), ...(secret ? { webhook_signing_secret: secret } : {}) };
  }

  async delete(p: Principal, id: string): Promise<{ count: number }> {
    const count = await store.deleteSubscription(this.db, scopeOf(p), id);
    if (count === 0) throw new NotFound('event subscription', id);
    return { count };
  }

  private async row(p: Principal, id: string): Promise<store.SubscriptionRow> {
    const row = await store.getSubscription(this.db, scopeOf(p), id);
    if (!row) throw new NotFound('event subscription', id);
    return row;
  }

  private target(t: Body, updating: boolean): { url: string; rotate: boolean } {
    checkFields(t, TARGET_FIELDS, 'a webhook target');
    if (t.type !== 'webhook')
      throw new BadRequest(
        `target.type ${JSON.stringify(t.type)} is not supported: Orrery delivers events to webhooks only ("webhook")`,
      );
    if (t.signing_mode !== undefined && t.signing_mode !== 'signed')
      throw new BadRequest(
        `target.signing_mode ${JSON.stringify(t.signing_mode)} is not supported: every delivery is signed ("signed")`,
      );
    if (t.payload_mode !== undefined && t.payload_mode !== 'event_envelope')
      throw new BadRequest(
        `target.payload_mode ${JSON.stringify(t.payload_mode)} is not supported: deliveries carry the event envelope ("event_envelope")`,
      );
    if (t.rotate_signing_secret === true && !updating)
      throw new BadRequest('target.rotate_signing_secret applies to an update: a new subscription gets a new secret');
    return { url: checkUrl(t.url as string, this.egress), rotate: t.rotate_signing_secret === true };
  }

  private dto(r: store.SubscriptionRow): SubscriptionDto {
    return {
      id: r.id,
      name: r.name,
      ...(r.description !== null ? { description: r.description } : {}),
      account_id: r.account_id,
      project_id: r.project_id,
      scope: 'project',
      filter: this.dialect.fromJson(r.filter) as EventFilter,
      target: { type: 'webhook', url: r.url, has_secret: true, signing_mode: 'signed', payload_mode: 'event_envelope' },
      run_as_role: r.run_as_role,
      is_system: false,
      protected: false,
      enabled: Number(r.enabled) === 1,
      ...(r.created_by ? { created_by: r.created_by } : {}),
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }
}

function checkFields(body: Body, known: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(body))
    if (!known.has(key) && body[key] !== undefined)
      throw new BadRequest(`${key} is not a field of ${what} Orrery applies: leave it out`);
}

function filterOf(f: Body): EventFilter {
  for (const key of ['condition', 'semantic_condition'])
    if (f[key] !== undefined)
      throw new BadRequest(
        `filter.${key} is not supported: filter by event_category, exclude_event_category, action and resource_type`,
      );
  return f as EventFilter;
}

function priorityOf(v: unknown): void {
  if (v !== undefined && v !== 'normal')
    throw new BadRequest(
      `priority ${JSON.stringify(v)} is not supported: events are delivered in one order ("normal")`,
    );
}

/** Vertesia's role name, checked: known, reads events, and within the caller's own role. */
function runAsRole(p: Principal, v: unknown): string {
  const role = typeof v === 'string' ? RUN_AS_ROLES[v] : undefined;
  if (!role)
    throw new BadRequest(
      `run_as_role ${JSON.stringify(v)} is not supported: use one of ${Object.keys(RUN_AS_ROLES).join(', ')} (automation is the usual one)`,
    );
  if (!roleWithin(role, p.role))
    throw new Forbidden(
      `run_as_role ${String(v)} reads more than your key's role (${p.role}) may: choose a narrower role`,
    );
  return v as string;
}

/** An http(s) URL without credentials that the egress policy allows (checked again at each delivery). */
function checkUrl(value: string, egress: EgressPolicy, field = 'target.url'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BadRequest(`${field} is not a URL: ${JSON.stringify(String(value).slice(0, 100))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new BadRequest(`${field} must be an http or https URL, got ${url.protocol}`);
  if (url.username || url.password) throw new BadRequest(`${field} must not carry credentials`);
  try {
    checkEndpointLiteral(url.toString(), egress);
  } catch (err) {
    if (err instanceof EgressRefused) throw new BadRequest(`${field}: ${err.message}`);
    throw err;
  }
  return url.toString();
}
