/**
 * Rate limits and quotas (issue 18): per project (`PUT /projects/:id {limits}`) and per key
 * (`PUT /apikeys/:id {limits}`), requests per minute, tokens per minute and cost (USD) per UTC
 * day. None by default, and then nothing is counted.
 *
 * The counts live in one table (`usage_counters`, 0020), one row per subject and window, changed
 * by single upserts: every replica on one PostgreSQL counts on the same row, so a limit holds
 * exactly across replicas. A request is counted when it arrives (refused ones too: a client
 * hammering a limit stays limited); tokens and cost when a run ends. Over a limit: 429 with
 * `Retry-After` and the headers the official client reads (`x-ratelimit-reason` `pacing` for
 * the per-minute limits, which it waits out by itself when short, `quota` for the daily cost).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Principal } from '../auth/principal.ts';
import type { AuthReads } from '../auth/reads.ts';
import { BadRequest, OrreryErrorWithHeaders } from '../util/errors.ts';

export interface Limits {
  requests_per_minute?: number;
  tokens_per_minute?: number;
  /** USD per UTC day, from the runs' recorded cost. */
  cost_per_day?: number;
}

export interface Usage {
  requests_this_minute: number;
  tokens_this_minute: number;
  cost_today: number;
}

type Subject = { kind: 'key' | 'project'; id: string; limits: Limits };
const NO_SUBJECTS: readonly Subject[] = Object.freeze([]);
type CachedLimits = { limits: Limits | null; until: number };

/** The caller's key and project that have limits (`kl`, `pl`: theirs, null for none). */
function subjectsWith(project: string, keyId: string | null, pl: Limits | null, kl: Limits | null): readonly Subject[] {
  if (!pl && !kl) return NO_SUBJECTS;
  const out: Subject[] = [];
  if (kl) out.push({ kind: 'key', id: keyId!, limits: kl });
  if (pl) out.push({ kind: 'project', id: project, limits: pl });
  return out;
}

/** How long limits read from the database serve before they are read again. */
const CACHE_MS = 5000;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** `{limits}` of a project or a key: each a positive number, or the whole `null` (no limits). */
export function limitsOf(value: unknown, where: string): Limits | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new BadRequest(`${where} must be an object {requests_per_minute, tokens_per_minute, cost_per_day} or null`);
  const out: Limits = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k !== 'requests_per_minute' && k !== 'tokens_per_minute' && k !== 'cost_per_day') {
      throw new BadRequest(`${where}.${k} is not a limit; use requests_per_minute, tokens_per_minute and cost_per_day`);
    }
    if (v === null) continue;
    const whole = k !== 'cost_per_day';
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 1e12 || (whole && !Number.isInteger(v))) {
      throw new BadRequest(`${where}.${k} must be a ${whole ? 'whole number' : 'number'} above 0 (or null for none)`);
    }
    out[k] = v;
  }
  return Object.keys(out).length ? out : null;
}

export class Limiter {
  private readonly projects = new Map<string, CachedLimits>();
  private readonly keys = new Map<string, CachedLimits>();

  constructor(
    private readonly db: Kysely<Database>,
    // Projects and keys are auth's: their limits are read through it (auth imports this module).
    private readonly auth: Pick<AuthReads, 'projectSettings' | 'keyLimits'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Forget cached limits (after a change on this replica; other replicas within CACHE_MS). */
  forget(kind: 'project' | 'key', id: string): void {
    (kind === 'project' ? this.projects : this.keys).delete(id);
  }

  /**
   * Counts a request of the caller and refuses it (throws a 429) when it goes over a per-minute
   * request limit, or, for `executes` (a run or an embedding call), when the tokens of this
   * minute or the cost of today already reached their limit. Answers the headers to add.
   */
  async admit(p: Principal, executes: boolean): Promise<Record<string, string> | undefined> {
    const subjects = this.cachedSubjects(p.account.id, p.project.id, p.keyId) ?? (await this.subjectsOf(p));
    if (!subjects.length) return undefined;
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    const headers: Record<string, string> = {};
    for (const s of subjects) {
      const limit = s.limits.requests_per_minute;
      if (limit === undefined) continue;
      const count = await this.bump(`${s.kind}:${s.id}`, `m:${minute}`, (minute + 2) * MINUTE_MS);
      const remaining = Math.max(0, limit - count);
      if (
        headers['x-ratelimit-remaining-requests'] === undefined ||
        remaining < Number(headers['x-ratelimit-remaining-requests'])
      ) {
        headers['x-ratelimit-limit-requests'] = String(limit);
        headers['x-ratelimit-remaining-requests'] = String(remaining);
      }
      if (count > limit) throw tooMany(s, 'requests', 'minute', limit, (minute + 1) * MINUTE_MS - now, headers);
    }
    if (executes) {
      const day = dayOf(now);
      for (const s of subjects) {
        const { tokens_per_minute: tpm, cost_per_day: cpd } = s.limits;
        if (tpm === undefined && cpd === undefined) continue;
        const use = await this.read(`${s.kind}:${s.id}`, minute, day);
        if (tpm !== undefined && use.tokens_this_minute >= tpm)
          throw tooMany(s, 'tokens', 'minute', tpm, (minute + 1) * MINUTE_MS - now, headers);
        if (cpd !== undefined && use.cost_today >= cpd)
          throw tooMany(s, 'cost', 'day', cpd, nextDay(now) - now, headers);
      }
    }
    return headers;
  }

  /**
   * requestSlot (POST /execute/rate-limit/request): how long the caller should wait before it
   * executes, from the limits of its key and project and what was used of them; 0: now. It
   * counts nothing (the execution that follows is counted).
   */
  async slotDelay(p: Principal): Promise<number> {
    const subjects = this.cachedSubjects(p.account.id, p.project.id, p.keyId) ?? (await this.subjectsOf(p));
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    const toNextMinute = (minute + 1) * MINUTE_MS - now;
    let delay = 0;
    for (const s of subjects) {
      const { requests_per_minute: rpm, tokens_per_minute: tpm, cost_per_day: cpd } = s.limits;
      const use = await this.read(`${s.kind}:${s.id}`, minute, dayOf(now));
      if (
        (rpm !== undefined && use.requests_this_minute >= rpm) ||
        (tpm !== undefined && use.tokens_this_minute >= tpm)
      )
        delay = Math.max(delay, toNextMinute);
      if (cpd !== undefined && use.cost_today >= cpd) delay = Math.max(delay, nextDay(now) - now);
    }
    return Math.ceil(delay);
  }

  /** After a run ended: its tokens and cost count against the limits of its key and project (if they have any). */
  async charge(account: string, project: string, keyId: string | null, tokens: number, cost: number): Promise<void> {
    if (!(tokens > 0) && !(cost > 0)) return;
    const subjects = this.cachedSubjects(account, project, keyId) ?? (await this.subjectsFor(account, project, keyId));
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    for (const s of subjects) {
      if (tokens > 0 && s.limits.tokens_per_minute !== undefined)
        await this.add(`${s.kind}:${s.id}`, `m:${minute}`, (minute + 2) * MINUTE_MS, { tokens });
      if (cost > 0 && s.limits.cost_per_day !== undefined)
        await this.add(`${s.kind}:${s.id}`, `d:${dayOf(now)}`, nextDay(now) + DAY_MS, { cost });
    }
  }

  /** `GET /limits`: the caller's limits (project and key) and what was used of them. */
  async report(
    p: Principal,
  ): Promise<{ project: { limits: Limits | null; use: Usage }; key: { limits: Limits | null; use: Usage } }> {
    const [project, key] = await Promise.all([this.projectLimits(p.account.id, p.project.id), this.keyLimits(p.keyId)]);
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    const day = dayOf(now);
    const [pu, ku] = await Promise.all([
      this.read(`project:${p.project.id}`, minute, day),
      this.read(`key:${p.keyId}`, minute, day),
    ]);
    return { project: { limits: project, use: pu }, key: { limits: key, use: ku } };
  }

  /** Deletes counters of windows long past (the retention sweeper calls it). */
  async sweep(): Promise<number> {
    const r = await this.db
      .deleteFrom('usage_counters')
      .where('expires_at', '<', new Date(this.now()).toISOString())
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /**
   * True when neither the caller's project nor its key has limits, as last read (within CACHE_MS):
   * the request is not counted, and the caller need not wait for the limiter (most servers have
   * no limits at all; every request asks).
   */
  unlimited(p: Principal): boolean {
    return this.cachedSubjects(p.account.id, p.project.id, p.keyId)?.length === 0;
  }

  /** The subjects of the caller from the cache alone (no promise), or undefined when one must be read. */
  private cachedSubjects(account: string, project: string, keyId: string | null): readonly Subject[] | undefined {
    const now = this.now();
    const pl = this.fresh(this.projects, project, now);
    const kl = keyId ? this.fresh(this.keys, keyId, now) : undefined;
    if (!pl || (keyId && !kl)) return undefined;
    return subjectsWith(project, keyId, pl.limits, kl?.limits ?? null);
  }

  private async subjectsOf(p: Principal): Promise<readonly Subject[]> {
    return this.subjectsFor(p.account.id, p.project.id, p.keyId);
  }

  private async subjectsFor(account: string, project: string, keyId: string | null): Promise<readonly Subject[]> {
    const [pl, kl] = await Promise.all([this.projectLimits(account, project), keyId ? this.keyLimits(keyId) : null]);
    return subjectsWith(project, keyId, pl, kl);
  }

  private async projectLimits(account: string, project: string): Promise<Limits | null> {
    return this.cached(this.projects, project, async () => {
      const settings = (await this.auth.projectSettings(project, account)) ?? {};
      return (settings.limits as Limits | null | undefined) ?? null;
    });
  }

  private async keyLimits(keyId: string): Promise<Limits | null> {
    return this.cached(this.keys, keyId, async () => {
      return ((await this.auth.keyLimits(keyId)) as Limits | null) ?? null;
    });
  }

  /** The entry of `id` read within CACHE_MS of `now`, or undefined. */
  private fresh(map: Map<string, CachedLimits>, id: string, now: number): CachedLimits | undefined {
    const hit = map.get(id);
    return hit && hit.until > now ? hit : undefined;
  }

  private async cached(
    map: Map<string, CachedLimits>,
    id: string,
    load: () => Promise<Limits | null>,
  ): Promise<Limits | null> {
    const now = this.now();
    const hit = this.fresh(map, id, now);
    if (hit) return hit.limits;
    const limits = await load();
    if (map.size > 10_000) map.clear();
    map.set(id, { limits, until: now + CACHE_MS });
    return limits;
  }

  /** One more request in the window, in one statement: answers the count with it. */
  private async bump(subject: string, window: string, expires: number): Promise<number> {
    const r = await this.db
      .insertInto('usage_counters')
      .values({ subject, bucket: window, requests: 1, tokens: 0, cost: 0, expires_at: new Date(expires).toISOString() })
      .onConflict((oc) => oc.columns(['subject', 'bucket']).doUpdateSet({ requests: sql`usage_counters.requests + 1` }))
      .returning('requests')
      .executeTakeFirstOrThrow();
    return Number(r.requests);
  }

  private async add(
    subject: string,
    window: string,
    expires: number,
    by: { tokens?: number; cost?: number },
  ): Promise<void> {
    const tokens = Math.round(by.tokens ?? 0);
    const cost = by.cost ?? 0;
    await this.db
      .insertInto('usage_counters')
      .values({ subject, bucket: window, requests: 0, tokens, cost, expires_at: new Date(expires).toISOString() })
      .onConflict((oc) =>
        oc
          .columns(['subject', 'bucket'])
          .doUpdateSet({ tokens: sql`usage_counters.tokens + ${tokens}`, cost: sql`usage_counters.cost + ${cost}` }),
      )
      .execute();
  }

  private async read(subject: string, minute: number, day: string): Promise<Usage> {
    const rows = await this.db
      .selectFrom('usage_counters')
      .select(['bucket', 'requests', 'tokens', 'cost'])
      .where('subject', '=', subject)
      .where('bucket', 'in', [`m:${minute}`, `d:${day}`])
      .execute();
    const m = rows.find((r) => r.bucket === `m:${minute}`);
    const d = rows.find((r) => r.bucket === `d:${day}`);
    return {
      requests_this_minute: Number(m?.requests ?? 0),
      tokens_this_minute: Number(m?.tokens ?? 0),
      cost_today: Number(d?.cost ?? 0),
    };
  }
}

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const nextDay = (ms: number): number => (Math.floor(ms / DAY_MS) + 1) * DAY_MS;

/** Raised over a limit; the error handler answers 429 with the JSON error shape and these headers. */
class RateLimited extends OrreryErrorWithHeaders {
  constructor(message: string, details: Record<string, unknown>, headers: Record<string, string>) {
    super('rate_limited', 429, message, details, headers);
  }
}

function tooMany(
  s: Subject,
  resource: 'requests' | 'tokens' | 'cost',
  window: 'minute' | 'day',
  limit: number,
  waitMs: number,
  headers: Record<string, string>,
): RateLimited {
  const wait = Math.max(1, Math.ceil(waitMs));
  const who = s.kind === 'key' ? 'this API key' : 'this project';
  const what = resource === 'cost' ? `USD ${limit} of run cost per day (UTC)` : `${limit} ${resource} per minute`;
  return new RateLimited(
    `${who} is limited to ${what} and reached it: retry in ${Math.ceil(wait / 1000)} s, or raise the limit (PUT /${s.kind === 'key' ? 'apikeys' : 'projects'}/${s.id} {limits})`,
    { resource, window, limit, scope: s.kind, retry_after_ms: wait },
    {
      ...headers,
      'retry-after': String(Math.ceil(wait / 1000)),
      'x-ratelimit-reason': window === 'day' ? 'quota' : 'pacing',
      'x-ratelimit-retry-ms': String(wait),
      'x-ratelimit-resource': resource,
      'x-ratelimit-window': window,
    },
  );
}
