/**
 * Console sessions: an opaque id in an HttpOnly cookie, stored hashed server-side, with idle and
 * absolute timeouts. The console's API calls carry short-lived JWTs issued from the session
 * (POST /auth/token); every request with one checks the session and the user again (a cache of at
 * most 5 s), so ending a session or suspending a user stops their next request.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { newId } from '../db/ids.ts';
import { Forbidden, NotFound, Unauthorized } from '../util/errors.ts';
import { signUserToken, type UserClaims } from '../auth/jwt.ts';
import type { KeyRole, Principal, Ref } from '../auth/principal.ts';
import * as store from './store.ts';
import type { Db, SessionRow, UserRow } from './store.ts';
import { hashSecret } from './links.ts';
import type { UserSettings } from './settings.ts';

/** How stale a session check may be: suspension and sign-out take effect within it on other replicas. */
const CHECK_CACHE_MS = 5_000;
/** A session's last use is written at most this often: a write per request would cost too much. */
const TOUCH_EVERY_MS = 60_000;

export interface SessionUser {
  session: SessionRow;
  user: UserRow;
}

export class Sessions {
  private readonly checked = new Map<string, { principal: Principal; userId: string; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly settings: UserSettings,
    private readonly jwtKey: Uint8Array,
    private readonly publicUrl: () => string,
  ) {}

  /** A new session for a user who just proved who they are; answers the cookie's secret. */
  async start(user: UserRow, method: string, ip: string | undefined): Promise<{ secret: string; session: SessionRow }> {
    const secret = randomBytes(32).toString('base64url');
    const now = new Date();
    const session: SessionRow = {
      id: newId(),
      token_hash: hashSecret(secret),
      user_id: user.id,
      account_id: user.account_id,
      csrf_token: randomBytes(24).toString('base64url'),
      method,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + this.settings.sessionMaxSeconds * 1000).toISOString(),
      ip: ip ?? null,
    };
    await store.insertSession(this.db, session);
    await store.updateUser(this.db, user.account_id, user.id, {
      last_sign_in_at: session.created_at,
      sign_in_provider: method === 'oidc' ? 'oidc' : (user.sign_in_provider ?? 'password'),
    });
    return { secret, session };
  }

  /** The live session of a cookie's secret, touched; 401 when there is none or it ended. */
  async fromSecret(secret: string | undefined): Promise<SessionUser> {
    if (!secret) throw new Unauthorized('not signed in: sign in at /auth/login or with SSO');
    const session = await store.sessionByHash(this.db, hashSecret(secret));
    if (!session) throw new Unauthorized('the session has ended: sign in again');
    const live = await this.live(session);
    const now = Date.now();
    if (now - Date.parse(session.last_seen_at) > TOUCH_EVERY_MS) {
      await store.touchSession(this.db, session.id, new Date(now).toISOString());
      session.last_seen_at = new Date(now).toISOString();
    }
    return live;
  }

  /** Checks timeouts and the user; ends a session that timed out. */
  private async live(session: SessionRow): Promise<SessionUser> {
    const now = Date.now();
    const idleEnd = Date.parse(session.last_seen_at) + this.settings.sessionIdleSeconds * 1000;
    if (now >= Date.parse(session.expires_at) || now >= idleEnd) {
      await store.deleteSession(this.db, session.id);
      throw new Unauthorized('the session has timed out: sign in again');
    }
    const user = await store.getUser(this.db, session.account_id, session.user_id);
    if (!user) throw new Unauthorized('this user has been removed');
    if (user.status !== 'active') throw new Unauthorized('this user is suspended: ask an admin of the account');
    return { session, user };
  }

  /** CSRF: a state change made with the cookie must also carry the session's token, which only the console can read. */
  checkCsrf(s: SessionUser, sent: string | undefined): void {
    const want = Buffer.from(s.session.csrf_token);
    const got = Buffer.from(sent ?? '');
    if (got.length !== want.length || !timingSafeEqual(got, want))
      throw new Forbidden(
        'missing or wrong x-csrf-token header: a request made with the session cookie must send the csrf_token of GET /auth/session',
      );
  }

  async end(s: SessionUser): Promise<void> {
    await store.deleteSession(this.db, s.session.id);
    for (const [k, v] of this.checked) if (v.principal.user?.sessionId === s.session.id) this.checked.delete(k);
  }

  /** Forgets every cached check of a user (suspended, removed, roles changed). */
  forgetUser(userId: string): void {
    for (const [k, v] of this.checked) if (v.userId === userId) this.checked.delete(k);
  }

  /** The user's role in a project: admin everywhere for an account admin, else their membership's. */
  async roleIn(user: UserRow, project: string): Promise<KeyRole | undefined> {
    if (user.account_admin) return 'admin';
    return (await store.membership(this.db, user.id, project))?.role as KeyRole | undefined;
  }

  /** The projects a user may act in, with their role there. */
  async projectsOf(user: UserRow): Promise<Array<Ref & { role: KeyRole }>> {
    if (user.account_admin)
      return (await store.listProjects(this.db, user.account_id)).map((x) => ({
        id: x.id,
        name: x.name,
        role: 'admin' as const,
      }));
    return (await store.memberships(this.db, user.account_id, user.id)).map((m) => ({
      id: m.project_id,
      name: m.project_name,
      role: m.role as KeyRole,
    }));
  }

  /** `POST /auth/token {project?}`: a JWT for the API, as the user, in one of their projects. */
  async issue(s: SessionUser, project?: string): Promise<{ token: string; token_type: 'Bearer'; expires_in: number }> {
    const projects = await this.projectsOf(s.user);
    const target = project ? projects.find((x) => x.id === project) : projects[0];
    if (!target) {
      if (project) throw new NotFound('project', project);
      throw new Forbidden('you are not a member of any project yet: ask an admin of the account to give you a role');
    }
    const account = await store.getAccount(this.db, s.user.account_id);
    const ttl = this.settings.sessionTokenSeconds;
    const token = await signUserToken(
      this.jwtKey,
      {
        account: { id: s.user.account_id, name: account?.name ?? '' },
        project: { id: target.id, name: target.name },
        keyId: `user:${s.user.id}`,
        role: target.role,
        via: 'jwt',
        user: { id: s.user.id, email: s.user.email, name: s.user.name, sessionId: s.session.id },
      },
      this.publicUrl(),
      ttl,
    );
    return { token, token_type: 'Bearer', expires_in: ttl };
  }

  /** Why a token's session is gone, in the words its user needs (suspension and removal end sessions too). */
  private async endedWhy(claims: UserClaims): Promise<Error> {
    const user = await store.getUser(this.db, claims.account.id, claims.user_id);
    if (!user) return new Unauthorized('this user has been removed');
    if (user.status !== 'active') return new Unauthorized('this user is suspended: ask an admin of the account');
    return new Unauthorized('the session of this token has ended: sign in again');
  }

  /** A session token on an API request: the session, the user and the role checked (cached at most 5 s). */
  async principalOf(claims: UserClaims): Promise<Principal> {
    const key = `${claims.sid}:${claims.project.id}`;
    const now = Date.now();
    const hit = this.checked.get(key);
    if (hit && hit.until > now) return hit.principal;
    const session = await store.sessionById(this.db, claims.sid);
    if (!session || session.user_id !== claims.user_id) throw await this.endedWhy(claims);
    const { user } = await this.live(session);
    const role = await this.roleIn(user, claims.project.id);
    if (!role) throw new Unauthorized('you are no longer a member of the project this token was issued for');
    const project = await store.getProject(this.db, user.account_id, claims.project.id);
    if (!project) throw new Unauthorized('the project this token was issued for is gone');
    const principal: Principal = {
      account: claims.account,
      project: { id: project.id, name: project.name },
      keyId: `user:${user.id}`,
      role,
      via: 'jwt',
      user: { id: user.id, email: user.email, name: user.name, sessionId: session.id },
    };
    if (this.checked.size > 10_000) this.checked.clear();
    this.checked.set(key, { principal, userId: user.id, until: now + CHECK_CACHE_MS });
    return principal;
  }
}
