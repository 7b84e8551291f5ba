/**
 * Accounts, projects, API keys and tokens: the rules. Keys are bound to a project and carry a
 * role (decisions.md): `admin` manages every project and key of its account, `member` only its
 * own project. Another project's data is a 404, never a 403.
 */
import type { Config } from '../config.ts';
import { newId, nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, Forbidden, NotFound, Unauthorized } from '../util/errors.ts';
import { deleteProjectData } from './project-store.ts';
import type { ProjectRowsDeleter } from '../db/project-rows.ts';
import { generateApiKey, hashApiKey, keyHint, looksLikeApiKey } from './keys.ts';
import { looksLikeJwt, signToken, verifyToken, type UserClaims } from './jwt.ts';
import { actorOf, keyRoleOf, type KeyRole, type KeyRoleInput, type Principal, type Scope } from './principal.ts';
import { roleWithin } from './permissions.ts';
import { auditedWrite, changesOf, type AuditEntry, type AuditLog } from '../audit/log.ts';
import { limitsOf, type Limits } from '../limits/limiter.ts';
import * as store from './store.ts';
import type { Db, KeyWithScope } from './store.ts';
import type { ProjectTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';

export interface ProjectDto {
  id: string;
  name: string;
  namespace: string;
  description?: string;
  account: string;
  settings: Record<string, unknown>;
  /** The official client's project configuration (PUT /projects/:id/configuration); `embeddings` always present. */
  configuration: ProjectConfiguration;
  created_at: string;
  updated_at: string;
}

export type ProjectConfiguration = { embeddings: Record<string, unknown> } & Record<string, unknown>;

/** The official client's Account, from what Orrery keeps of an account. */
export interface AccountDto {
  id: string;
  name: string;
  email_domains: string[];
  onboarding: { completed: boolean };
  datacenter: string;
  account_type: string;
  billing: { method: string };
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyDto {
  id: string;
  name: string;
  role: KeyRole;
  project: { id: string; name: string };
  account: string;
  hint: string;
  expires_at: string | null;
  /** A disabled key is refused at authentication (401) until it is enabled again. */
  enabled: boolean;
  created_by: string;
  created_at: string;
  /** The key's own rate limits and quotas (src/limits); null for none. */
  limits: Limits | null;
  /** The secret: only in the answer of the call that created the key. */
  value?: string;
}

export interface BootstrapResult {
  created: boolean;
  account: { id: string; name: string };
  project: { id: string; name: string };
  /** The admin key, when this start created it (or it came from ORRERY_ADMIN_KEY). */
  key?: string;
}

/**
 * A feature's key in a project's `settings` (e.g. `embeddings`), set by `PUT /projects/:id`. The
 * feature validates the value (and may call out to check it) and hears of the change once stored.
 */
export interface ProjectSettingHandler<T = unknown> {
  prepare(scope: Scope, value: unknown): Promise<T>;
  /** The value in force when none was stored. */
  current(scope: Scope, stored: unknown): T;
  changed?(scope: Scope, before: T, after: T): Promise<void>;
}

/** Authenticated principals are cached briefly: a key lookup on every request costs a query. */
const CACHE_MS = 10_000;

export class AuthService {
  private readonly cache = new Map<string, { principal: Principal; until: number; keyExpires: number }>();
  private readonly settingHandlers = new Map<string, ProjectSettingHandler<any>>();
  private readonly deletionHandlers: Array<(scope: Scope) => Promise<void>> = [];
  private readonly projectRowOwners: ProjectRowsDeleter[] = [];
  private readonly keyChangeHandlers: Array<(keyId: string) => void> = [];
  /** Resolves a user session's token (src/users): checked there, on every request, not cached here. */
  private userTokens?: (claims: UserClaims) => Promise<Principal>;

  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly config: Config,
    private readonly jwtKey: Uint8Array,
    /** The audit trail: projects, settings, keys and tokens issued. */
    private readonly audit?: AuditLog,
  ) {}

  private audited<T>(p: Principal, entry: AuditEntry, work: (db: Db) => Promise<T>): Promise<T> {
    return auditedWrite(this.audit, this.db, p, entry, work);
  }

  /** First start: a default account, project and admin key. Safe when replicas start together. */
  async bootstrap(): Promise<BootstrapResult> {
    return this.db.transaction().execute(async (trx) => {
      const claimed = await trx
        .insertInto('settings')
        .values({ key: 'bootstrapped', value: nowIso() })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      const created = Number(claimed.numInsertedOrUpdatedRows ?? 0) > 0;
      if (created) {
        const now = nowIso();
        const account = { id: newId(), name: 'Default account', created_at: now };
        await store.insertAccount(trx, account);
        const project: ProjectTable = {
          id: newId(),
          account_id: account.id,
          name: 'Default project',
          namespace: 'default',
          description: null,
          settings: {},
          created_at: now,
          updated_at: now,
        };
        await store.insertProject(trx, { ...project, settings: this.dialect.toJson(project.settings) });
        const secret = this.config.adminKey ?? generateApiKey();
        await store.insertKey(trx, this.keyRow(secret, 'Admin key', 'admin', account.id, project.id, 'system', null));
        return {
          created,
          account: { id: account.id, name: account.name },
          project: { id: project.id, name: project.name },
          key: secret,
        };
      }
      const account = await store.firstAccount(trx);
      if (!account) throw new Error('the database is marked bootstrapped but holds no account');
      const [project] = await store.listProjects(trx, account.id);
      const result: BootstrapResult = {
        created,
        account: { id: account.id, name: account.name },
        project: { id: project.id, name: project.name },
      };
      // A newly configured ORRERY_ADMIN_KEY is honoured on a later start too.
      if (this.config.adminKey && !(await store.findKeyByHash(trx, hashApiKey(this.config.adminKey)))) {
        await store.insertKey(
          trx,
          this.keyRow(
            this.config.adminKey,
            'Admin key (ORRERY_ADMIN_KEY)',
            'admin',
            account.id,
            project.id,
            'system',
            null,
          ),
        );
        result.key = this.config.adminKey;
      }
      return result;
    });
  }

  async authenticate(token: string | undefined): Promise<Principal> {
    if (!token) throw new Unauthorized('missing bearer token: send "Authorization: Bearer <API key or token>"');
    const cached = this.cache.get(token);
    const now = Date.now();
    if (cached && cached.until > now && cached.keyExpires > now) return cached.principal;

    let found: KeyWithScope | undefined;
    let via: Principal['via'];
    let tokenExpires = Infinity;
    if (looksLikeApiKey(token)) {
      found = await store.findKeyByHash(this.db, hashApiKey(token));
      if (!found) throw new Unauthorized('unknown API key');
      via = 'apikey';
    } else if (looksLikeJwt(token)) {
      const verified = await verifyToken(this.jwtKey, token);
      if (!verified.ok) throw new Unauthorized(verified.reason);
      if (verified.claims.type === 'user') {
        if (!this.userTokens) throw new Unauthorized('user sign-in is not available on this server');
        return this.userTokens(verified.claims);
      }
      found = await store.findKeyById(this.db, verified.claims.key_id);
      if (!found) throw new Unauthorized('the API key this token was issued for has been deleted');
      via = 'jwt';
      // A token an admin key had issued for another project of its account acts in that project.
      if (verified.claims.project.id !== found.project.id) {
        const other =
          found.key.role === 'admin'
            ? await store.getProject(this.db, found.account.id, verified.claims.project.id)
            : undefined;
        if (!other)
          throw new Unauthorized(
            'the project this token was issued for is gone, or its key may no longer act there; issue a new token',
          );
        found = { ...found, project: { id: other.id, name: other.name } };
      }
      const exp = (verified.claims as unknown as { exp?: number }).exp;
      if (exp) tokenExpires = exp * 1000;
    } else {
      throw new Unauthorized('bearer token is neither an API key (sk-…) nor a token issued by /api/v1/token/issue');
    }
    const keyExpires = Math.min(found.key.expires_at ? Date.parse(found.key.expires_at) : Infinity, tokenExpires);
    if (keyExpires <= now) throw new Unauthorized('API key has expired');
    if (!found.key.enabled)
      throw new Unauthorized(
        'API key is disabled: an admin (or a key of its project) can enable it with PUT /api/v1/apikeys/:id {"enabled": true}',
      );
    const principal: Principal = {
      account: found.account,
      project: found.project,
      keyId: found.key.id,
      role: found.key.role as KeyRole,
      via,
    };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(token, { principal, until: now + CACHE_MS, keyExpires });
    return principal;
  }

  async issueToken(
    p: Principal,
    bodyKey?: string,
    project?: string,
  ): Promise<{ token: string; token_type: 'Bearer'; expires_in: number }> {
    // A token must come from the key itself: were a JWT enough, a stolen one could be renewed for as
    // long as its key lives, and the TTL would bound nothing.
    if (p.via === 'jwt' && bodyKey === undefined) {
      throw new Unauthorized(
        'a token is issued only for an API key, not for another token: send the API key (sk-...) as the bearer',
      );
    }
    // The Python client sends {type:'apikey', key}; the key in the body must be the caller's own.
    if (bodyKey !== undefined) {
      const other = await this.authenticate(bodyKey);
      if (other.keyId !== p.keyId) throw new BadRequest('body "key" differs from the bearer API key; send one key');
    }
    if (project !== undefined && project !== p.project.id) {
      if (p.role !== 'admin')
        throw new Forbidden(`only an admin key may issue a token for another project (this key's role is ${p.role})`);
      const row = await this.visibleProject(p, project);
      p = { ...p, project: { id: row.id, name: row.name } };
    }
    const ttl = this.config.jwtTtlSeconds;
    const token = await signToken(this.jwtKey, p, this.config.publicUrl, ttl);
    // The token itself is never recorded: who got one, when, from where, and for how long.
    await this.audit?.write(this.db, p, {
      action: 'create',
      resourceType: 'token',
      resourceId: p.keyId,
      details: { via: p.via, expires_in: ttl },
    });
    return { token, token_type: 'Bearer', expires_in: ttl };
  }

  async createProject(
    p: Principal,
    input: { name: string; namespace?: string; description?: string },
  ): Promise<ProjectDto> {
    if (p.role !== 'admin') throw new Forbidden('only an admin key may create projects');
    const namespace = input.namespace ?? slug(input.name);
    if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(namespace)) {
      throw new BadRequest(
        'namespace must be 1-63 lower-case letters, digits, "-" or "_", starting with a letter or digit',
      );
    }
    const existing = await store.listProjects(this.db, p.account.id);
    if (existing.some((x) => x.namespace === namespace)) {
      throw new BadRequest(
        `a project with namespace "${namespace}" already exists in this account; choose another namespace`,
      );
    }
    const now = nowIso();
    const row: ProjectTable = {
      id: newId(),
      account_id: p.account.id,
      name: input.name,
      namespace,
      description: input.description ?? null,
      settings: {},
      created_at: now,
      updated_at: now,
    };
    await this.audited(
      p,
      {
        action: 'create',
        resourceType: 'project',
        resourceId: row.id,
        projectId: row.id,
        changes: changesOf(null, projectView(row)),
      },
      (db) => store.insertProject(db, { ...row, settings: this.dialect.toJson(row.settings) }),
    );
    return this.toProject(row);
  }

  async listProjects(p: Principal): Promise<ProjectDto[]> {
    const rows = await store.listProjects(this.db, p.account.id);
    return rows
      .filter((r) => p.role === 'admin' || r.id === p.project.id)
      .map((r) => this.toProject(this.decodeProject(r)));
  }

  /** How a user session's token becomes a principal (src/users/sessions.ts). */
  useUserTokens(resolve: (claims: UserClaims) => Promise<Principal>): void {
    this.userTokens = resolve;
  }

  /** Keys changed outside this service (a user's own keys, disabled with the user). */
  keysChanged(ids: readonly string[]): void {
    for (const id of ids) this.forgetKey(id);
  }

  /** Told when a key changed or went away (server.ts: the limiter forgets its cached limits). */
  onKeyChanged(handler: (keyId: string) => void): void {
    this.keyChangeHandlers.push(handler);
  }

  /** Lets a feature own one key of project settings (server.ts wires them). */
  useSetting<T>(key: string, handler: ProjectSettingHandler<T>): void {
    this.settingHandlers.set(key, handler);
  }

  /** `PUT /projects/:id`: name, description, and the settings keys features own. */
  async updateProject(p: Principal, id: string, input: Record<string, unknown>): Promise<ProjectDto> {
    const row = this.decodeProject(await this.visibleProject(p, id));
    const scope: Scope = { account: row.account_id, project: row.id };
    const settings = { ...((row.settings as Record<string, unknown> | null) ?? {}) };
    const patch: Partial<ProjectTable> = {};
    const changes: Array<() => Promise<void>> = [];
    // A project's limits bound every key of it, developers' too: only an admin changes them.
    if ('limits' in input && p.role !== 'admin')
      throw new Forbidden(`only an admin key may change a project's limits (this key's role is ${p.role})`);
    for (const [key, value] of Object.entries(input)) {
      if (key === 'name') {
        if (typeof value !== 'string' || !value.trim() || value.length > 200)
          throw new BadRequest('name must be a non-empty string of at most 200 characters');
        patch.name = value.trim();
      } else if (key === 'description') {
        if (value !== null && typeof value !== 'string') throw new BadRequest('description must be a string or null');
        patch.description = (value as string | null) || null;
      } else if (this.settingHandlers.has(key)) {
        const handler = this.settingHandlers.get(key)!;
        const before = handler.current(scope, settings[key]);
        const after = await handler.prepare(scope, value);
        settings[key] = after;
        if (handler.changed) changes.push(() => handler.changed!(scope, before, after));
      } else if (!['id', 'account', 'namespace', 'created_at', 'updated_at', 'settings'].includes(key)) {
        throw new BadRequest(
          `${key} cannot be changed; a project takes name, description${[...this.settingHandlers.keys()].map((k) => `, ${k}`).join('')}`,
        );
      }
    }
    patch.settings = this.dialect.toJson(settings);
    patch.updated_at = nowIso();
    const entry: AuditEntry = {
      action: 'update',
      resourceType: 'project',
      resourceId: row.id,
      projectId: row.id,
      changes: changesOf(projectView(row), projectView({ ...row, ...patch, settings })),
    };
    await this.audited(p, entry, (db) => store.updateProjectRow(db, row.account_id, row.id, patch));
    for (const change of changes) await change();
    return this.toProject({ ...row, ...patch, settings });
  }

  /** A feature's deletion of its rows, run inside a project's deletion transaction (server.ts wires each). */
  ownsProjectRows(deleteRows: ProjectRowsDeleter): void {
    this.projectRowOwners.push(deleteRows);
  }

  /** Work a feature does after a project's rows are gone (server.ts wires them: blob bytes). */
  onProjectDeleted(handler: (scope: Scope) => Promise<void>): void {
    this.deletionHandlers.push(handler);
  }

  /**
   * `DELETE /projects/:id` (admin keys only): the project and every row it holds, in one
   * transaction, then its blob bytes. The caller's own project is refused (409): its key would go
   * with it, locking the caller out, and the account would be left without the project it called
   * from; delete it with an admin key of another project.
   */
  async deleteProject(p: Principal, id: string): Promise<{ id: string }> {
    const row = await this.visibleProject(p, id);
    if (p.role !== 'admin') throw new Forbidden('only an admin key may delete projects');
    const home = p.via === 'jwt' ? (await store.findKeyById(this.db, p.keyId))?.project.id : p.project.id;
    if (row.id === p.project.id || row.id === home) {
      throw new Conflict(
        'this is the project of the key you call with: deleting it would delete that key too and lock you out; call with an admin key of another project of the account',
      );
    }
    const scope: Scope = { account: row.account_id, project: row.id };
    const entry: AuditEntry = {
      action: 'delete',
      resourceType: 'project',
      resourceId: row.id,
      projectId: row.id,
      changes: changesOf(projectView(this.decodeProject(row)), null),
    };
    await deleteProjectData(
      this.db,
      scope,
      this.projectRowOwners,
      this.audit && ((trx) => this.audit!.write(trx, p, entry)),
    );
    for (const [token, entry] of this.cache) if (entry.principal.project.id === row.id) this.cache.delete(token);
    for (const handler of this.deletionHandlers) await handler(scope);
    return { id: row.id };
  }

  /**
   * `PUT /projects/:id/configuration` (the official client's updateConfiguration): merges the
   * given keys into the stored configuration (null clears a key) and answers the whole of it.
   * Recorded and answered; Orrery's own embedding provider stays `PUT /projects/:id {embeddings}`.
   */
  async updateConfiguration(p: Principal, id: string, input: Record<string, unknown>): Promise<ProjectConfiguration> {
    const row = this.decodeProject(await this.visibleProject(p, id));
    const settings = { ...((row.settings as Record<string, unknown> | null) ?? {}) };
    const config: Record<string, unknown> = {
      ...((settings.configuration as Record<string, unknown> | undefined) ?? {}),
    };
    for (const [key, value] of Object.entries(input)) {
      if (!CONFIGURATION_KEYS.includes(key)) {
        throw new BadRequest(
          `unknown project configuration key ${JSON.stringify(key.slice(0, 100))}; keys: ${CONFIGURATION_KEYS.join(', ')}`,
        );
      }
      if (value === null) delete config[key];
      else if (value !== undefined) config[key] = value;
    }
    if (JSON.stringify(config).length > MAX_CONFIGURATION_BYTES)
      throw new BadRequest(`the project configuration may hold at most ${MAX_CONFIGURATION_BYTES} bytes of JSON`);
    const before = projectView(row);
    settings.configuration = config;
    const entry: AuditEntry = {
      action: 'update',
      resourceType: 'project',
      resourceId: row.id,
      projectId: row.id,
      changes: changesOf(before, projectView({ ...row, settings })),
    };
    await this.audited(p, entry, (db) =>
      store.updateProjectRow(db, row.account_id, row.id, {
        settings: this.dialect.toJson(settings),
        updated_at: nowIso(),
      }),
    );
    return configurationOf(settings);
  }

  /** `GET /account` (the official client's account.info): the key's account. */
  async accountInfo(p: Principal): Promise<AccountDto> {
    const row = await store.getAccount(this.db, p.account.id);
    if (!row) throw new NotFound('account', p.account.id);
    return {
      id: row.id,
      name: row.name,
      email_domains: [],
      onboarding: { completed: true },
      datacenter: 'local',
      account_type: 'unknown',
      billing: { method: 'invoice' },
      created_by: 'system',
      updated_by: 'system',
      created_at: row.created_at,
      updated_at: row.created_at,
    };
  }

  /** `GET /account/projects` (account.projects): `{data: [{id, name, account}]}`, the projects the key may use. */
  async accountProjects(p: Principal): Promise<{ data: Array<{ id: string; name: string; account: string }> }> {
    const projects = await this.listProjects(p);
    return { data: projects.map((x) => ({ id: x.id, name: x.name, account: x.account })) };
  }

  async getProject(p: Principal, id: string): Promise<ProjectDto> {
    return this.toProject(this.decodeProject(await this.visibleProject(p, id)));
  }

  async createKey(
    p: Principal,
    input: { name: string; role?: KeyRoleInput; project?: string; expires_at?: string; limits?: unknown },
  ): Promise<ApiKeyDto> {
    const role = keyRoleOf(input.role ?? 'developer');
    mayManage(p, role, 'create');
    const project = input.project
      ? await this.visibleProject(p, input.project)
      : await this.visibleProject(p, p.project.id);
    const expires = input.expires_at !== undefined ? futureDate(input.expires_at) : null;
    const secret = generateApiKey();
    const limits = input.limits === undefined ? null : limitsOf(input.limits, 'limits');
    const row = {
      ...this.keyRow(secret, input.name, role, p.account.id, project.id, actorOf(p), expires),
      limits: this.dialect.toJson(limits),
    };
    await this.audited(
      p,
      {
        action: 'create',
        resourceType: 'apikey',
        resourceId: row.id,
        projectId: project.id,
        changes: changesOf(null, keyView(row)),
      },
      (db) => store.insertKey(db, row),
    );
    return {
      ...this.toKey({
        key: { ...row, limits, enabled: 1 },
        account: p.account,
        project: { id: project.id, name: project.name },
      }),
      value: secret,
    };
  }

  async listKeys(p: Principal): Promise<ApiKeyDto[]> {
    const rows = await store.listKeys(this.db, p.account.id, p.role === 'admin' ? undefined : p.project.id);
    return rows.map((r) => this.toKey(r));
  }

  async deleteKey(p: Principal, id: string): Promise<{ id: string }> {
    const found = await this.visibleKey(p, id);
    mayManage(p, found.key.role as KeyRole, 'delete');
    await this.audited(
      p,
      {
        action: 'delete',
        resourceType: 'apikey',
        resourceId: id,
        projectId: found.key.project_id,
        changes: changesOf(keyView(found.key), null),
      },
      (db) => store.deleteKey(db, p.account.id, id),
    );
    this.forgetKey(id);
    return { id };
  }

  /** `GET /apikeys/:id`: never the secret, which is stored hashed (`withValue` is refused). */
  async getKey(p: Principal, id: string, withValue = false): Promise<ApiKeyDto> {
    const found = await this.visibleKey(p, id);
    if (withValue)
      throw new BadRequest(
        'the secret of an API key is stored hashed and shown only once, in the answer of POST /apikeys; create a new key if it is lost',
      );
    return this.toKey(found);
  }

  /**
   * `PUT /apikeys/:id {name?, role?, expires_at?, enabled?}`. Same rights as deleting: a member
   * changes keys of its own project, never an admin key, and never makes one admin. No key
   * disables itself (409: that would lock the caller out). A disabled
   * key is refused at once on this replica; other replicas forget their cached principal within
   * 10 seconds (CACHE_MS).
   */
  async updateKey(
    p: Principal,
    id: string,
    input: { name?: string; role?: KeyRoleInput; expires_at?: string | null; enabled?: boolean; limits?: unknown },
  ): Promise<ApiKeyDto> {
    const found = await this.visibleKey(p, id);
    mayManage(p, found.key.role as KeyRole, 'change');
    const role = input.role === undefined ? undefined : keyRoleOf(input.role);
    if (role !== undefined) mayManage(p, role, 'give');
    const patch: { name?: string; role?: KeyRole; expires_at?: string | null; enabled?: number; limits?: unknown } = {};
    if (input.limits !== undefined) {
      // A limit a key could lift itself would not limit it.
      if (id === p.keyId)
        throw new Forbidden(
          'a key cannot change its own limits: change them with another key (an admin key, or a developer key of the project)',
        );
      patch.limits = limitsOf(input.limits, 'limits');
    }
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name || name.length > 200) throw new BadRequest('name must be a non-empty string of at most 200 characters');
      patch.name = name;
    }
    if (role !== undefined) patch.role = role;
    if (input.expires_at !== undefined)
      patch.expires_at = input.expires_at === null ? null : futureDate(input.expires_at);
    if (input.enabled === false && id === p.keyId)
      throw new Conflict('this is the key you call with: disabling it would lock you out; disable it with another key');
    if (input.enabled !== undefined) patch.enabled = input.enabled ? 1 : 0;
    if (Object.keys(patch).length) {
      const entry: AuditEntry = {
        action: 'update',
        resourceType: 'apikey',
        resourceId: id,
        projectId: found.key.project_id,
        changes: changesOf(keyView(found.key), keyView({ ...found.key, ...patch })),
      };
      await this.audited(p, entry, (db) =>
        store.updateKeyRow(
          db,
          p.account.id,
          id,
          'limits' in patch ? { ...patch, limits: this.dialect.toJson(patch.limits) } : patch,
        ),
      );
    }
    this.forgetKey(id);
    return this.toKey({ ...found, key: { ...found.key, ...patch } });
  }

  /** A key the caller may see: any of the account for an admin, its own project's for a member. */
  private async visibleKey(p: Principal, id: string): Promise<KeyWithScope> {
    const found = await store.findKeyById(this.db, id);
    const visible =
      found && found.key.account_id === p.account.id && (p.role === 'admin' || found.key.project_id === p.project.id);
    if (!visible) throw new NotFound('API key', id);
    return found;
  }

  /** Drops the cached principals of a key that changed or went away. */
  private forgetKey(id: string): void {
    for (const [token, entry] of this.cache) if (entry.principal.keyId === id) this.cache.delete(token);
    for (const handler of this.keyChangeHandlers) handler(id);
  }

  /** A project the caller may see: its own, or any of the account for an admin. */
  private async visibleProject(p: Principal, id: string): Promise<ProjectTable> {
    const row = await store.getProject(this.db, p.account.id, id);
    if (!row || (p.role !== 'admin' && row.id !== p.project.id)) throw new NotFound('project', id);
    return row;
  }

  private keyRow(
    secret: string,
    name: string,
    role: KeyRole,
    account: string,
    project: string,
    createdBy: string,
    expires: string | null,
  ) {
    return {
      id: newId(),
      account_id: account,
      project_id: project,
      name,
      role,
      key_hash: hashApiKey(secret),
      key_hint: keyHint(secret),
      expires_at: expires,
      created_by: createdBy,
      created_at: nowIso(),
    };
  }

  private decodeProject(r: ProjectTable): ProjectTable {
    return { ...r, settings: this.dialect.fromJson(r.settings) };
  }

  private toProject(r: ProjectTable): ProjectDto {
    return {
      id: r.id,
      name: r.name,
      namespace: r.namespace,
      ...(r.description ? { description: r.description } : {}),
      account: r.account_id,
      settings: (r.settings as Record<string, unknown> | null) ?? {},
      configuration: configurationOf((r.settings as Record<string, unknown> | null) ?? {}),
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  private toKey(k: KeyWithScope): ApiKeyDto {
    return {
      id: k.key.id,
      name: k.key.name,
      role: k.key.role as KeyRole,
      project: k.project,
      account: k.account.id,
      hint: k.key.key_hint,
      expires_at: k.key.expires_at,
      enabled: Boolean(k.key.enabled),
      created_by: k.key.created_by,
      created_at: k.key.created_at,
      limits: this.dialect.fromJson<Limits | null>(k.key.limits) ?? null,
    };
  }
}

/** The keys of the official client's ProjectConfiguration. */
const CONFIGURATION_KEYS = [
  'default_environment',
  'default_model',
  'human_context',
  'defaults',
  'default_visibility',
  'sync_content_properties',
  'embeddings',
  'datacenter',
  'storage_bucket',
  'agent_streaming_enabled',
  'agent',
  'indexing',
  'intake',
  'main_language',
  'browser_use',
  'pdf_template_object_id',
];
const MAX_CONFIGURATION_BYTES = 256 * 1024;

const configurationOf = (settings: Record<string, unknown>): ProjectConfiguration => {
  const stored = (settings.configuration as Record<string, unknown> | undefined) ?? {};
  return { ...stored, embeddings: (stored.embeddings as Record<string, unknown> | undefined) ?? {} };
};

/** An `expires_at` a caller gives: an ISO 8601 date-time in the future, normalised. */
function futureDate(value: string): string {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new BadRequest('expires_at must be an ISO 8601 date-time');
  if (t <= Date.now()) throw new BadRequest('expires_at must be in the future');
  return new Date(t).toISOString();
}

const slug = (name: string): string =>
  name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63) || 'project';

/**
 * A key may create, change, delete or hand out keys whose role is within its own (every
 * permission of that role is the caller's): a developer manages developer, executor and
 * reader keys; only an admin manages admin keys.
 */
function mayManage(p: Principal, target: KeyRole, verb: 'create' | 'change' | 'delete' | 'give'): void {
  if (roleWithin(target, p.role)) return;
  const what = verb === 'give' ? `give a key the role ${target}` : `${verb} a key of role ${target}`;
  throw new Forbidden(
    `a key of role ${p.role} cannot ${what}: its permissions go beyond the caller's (only an admin key can)`,
    { role: p.role, target },
  );
}

/** What the audit trail shows of a project: its name, description and settings (the embeddings, the configuration). */
const projectView = (row: {
  name: string;
  description: string | null;
  settings?: unknown;
}): Record<string, unknown> => ({
  name: row.name,
  description: row.description,
  ...((row.settings as Record<string, unknown> | null) ?? {}),
});

/** What the audit trail shows of a key: never its hash. */
const keyView = (k: {
  name: string;
  role: string;
  project_id: string;
  expires_at: string | null;
  enabled?: number;
  limits?: unknown;
}): Record<string, unknown> => ({
  name: k.name,
  role: k.role,
  project: k.project_id,
  expires_at: k.expires_at,
  enabled: k.enabled === undefined ? true : !!k.enabled,
  limits: typeof k.limits === 'string' ? JSON.parse(k.limits) : (k.limits ?? null),
});
