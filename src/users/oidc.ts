/**
 * OIDC single sign-on (authorization code flow with PKCE, through openid-client): /auth/oidc/login
 * sends the browser to the identity provider with a fresh state, nonce and PKCE challenge, kept in
 * a short-lived signed cookie; /auth/oidc/callback has openid-client check them and the ID token,
 * then matches a user by verified email (or accepts their pending invitation, or creates them
 * when ORRERY_OIDC_AUTO_CREATE is on) and starts a session. Refusals are a page that says why.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SignJWT, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { nowIso } from '../db/ids.ts';
import { KEY_ROLES, type KeyRole } from '../auth/principal.ts';
import * as store from './store.ts';
import type { Db, UserRow } from './store.ts';
import type { OidcSettings, UserSettings } from './settings.ts';
import type { Sessions } from './sessions.ts';
import type { SignIn } from './sign-in.ts';
import type { UsersService } from './service.ts';
import { isSecure, readCookie, setSessionCookie } from './cookies.ts';

const FLOW_COOKIE = 'orrery_oidc_flow';
const FLOW_SECONDS = 600;
const FLOW_AUDIENCE = 'orrery-oidc-flow';

/** Refusal with a page for the person at the browser (never JSON: they followed a redirect). */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const loopback = (u: URL) => ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);

export function checkOidcSettings(s: OidcSettings): void {
  if (!(KEY_ROLES as readonly string[]).includes(s.defaultRole))
    throw new Error(
      `ORRERY_OIDC_DEFAULT_ROLE must be one of ${KEY_ROLES.join(', ')}, got ${JSON.stringify(s.defaultRole)}`,
    );
  const u = new URL(s.issuer);
  // Plain http only on this machine (a provider in development or a test); tokens cross the network otherwise.
  if (u.protocol !== 'https:' && !loopback(u))
    throw new Error(`ORRERY_OIDC_ISSUER must be https (http only on localhost), got ${JSON.stringify(s.issuer)}`);
}

export interface OidcDeps {
  db: Db;
  settings: UserSettings & { oidc: OidcSettings };
  sessions: Sessions;
  signIn: SignIn;
  users: UsersService;
  jwtKey: Uint8Array;
  publicUrl: () => string;
  account: () => string;
}

export function registerOidc(app: FastifyInstance, deps: OidcDeps): void {
  const s = deps.settings.oidc;
  checkOidcSettings(s);
  let discovered: Promise<oidc.Configuration> | undefined;
  // Discovered on first use, and again after a failure: the provider may start after Orrery.
  const config = () =>
    (discovered ??= oidc
      .discovery(new URL(s.issuer), s.clientId, s.clientSecret, undefined, {
        ...(new URL(s.issuer).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((err) => {
        discovered = undefined;
        throw err;
      }));
  const redirectUri = () => `${deps.publicUrl()}/auth/oidc/callback`;
  const secure = () => isSecure(deps.publicUrl());
  const flowCookie = (value: string, maxAge: number) =>
    `${FLOW_COOKIE}=${value}; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure() ? '; Secure' : ''}`;

  app.get(
    '/auth/oidc/login',
    { schema: { tags: ['sign-in'], summary: 'Sign in with SSO: redirects to the identity provider' } },
    async (_req, reply) => {
      let cfg: oidc.Configuration;
      try {
        cfg = await config();
      } catch (err) {
        return page(reply, 502, `The identity provider at ${s.issuer} could not be reached: ${(err as Error).message}`);
      }
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const flow = await new SignJWT({ state, nonce, verifier })
        .setProtectedHeader({ alg: 'HS256' })
        .setAudience(FLOW_AUDIENCE)
        .setExpirationTime(Math.floor(Date.now() / 1000) + FLOW_SECONDS)
        .sign(deps.jwtKey);
      const url = oidc.buildAuthorizationUrl(cfg, {
        redirect_uri: redirectUri(),
        scope: s.scopes,
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      reply.header('set-cookie', flowCookie(flow, FLOW_SECONDS));
      return reply.redirect(url.href, 302);
    },
  );

  app.get(
    '/auth/oidc/callback',
    { schema: { tags: ['sign-in'], summary: 'Where the identity provider sends the browser back' } },
    async (req, reply) => {
      try {
        const user = await callback(req);
        const { secret } = await deps.sessions.start(user, 'oidc', req.ip);
        setSessionCookie(reply, secure(), secret, deps.settings.sessionMaxSeconds);
        reply.header('set-cookie', [reply.getHeader('set-cookie') as string, flowCookie('', 0)]);
        return reply.redirect('/', 302);
      } catch (err) {
        if (err instanceof Refusal) return page(reply, err.status, err.message);
        // openid-client's errors say "invalid response encountered"; their cause says which check failed.
        const e = err as Error & { cause?: { message?: string } };
        const msg = [e.message ?? String(err), e.cause?.message].filter(Boolean).join(': ');
        return page(reply, 400, `Sign-in with SSO failed: ${msg}`);
      }
    },
  );

  async function callback(req: FastifyRequest): Promise<UserRow> {
    const q = req.query as Record<string, unknown>;
    if (typeof q.error === 'string')
      throw new Refusal(
        403,
        `The identity provider refused the sign-in: ${q.error}${typeof q.error_description === 'string' ? ` (${q.error_description})` : ''}`,
      );
    const raw = readCookie(req, FLOW_COOKIE);
    if (!raw) throw new Refusal(400, 'This sign-in was not started here, or took longer than 10 minutes: start again.');
    let flow: { state: string; nonce: string; verifier: string };
    try {
      flow = (await jwtVerify(raw, deps.jwtKey, { audience: FLOW_AUDIENCE, algorithms: ['HS256'] })).payload as never;
    } catch {
      throw new Refusal(400, 'This sign-in was not started here, or took longer than 10 minutes: start again.');
    }
    const current = new URL(req.url, deps.publicUrl());
    const tokens = await oidc.authorizationCodeGrant(await config(), current, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (!idClaims) throw new Refusal(400, 'The identity provider sent no ID token.');
    // Providers that keep scope claims out of the ID token serve them at userinfo (for the same subject).
    const claims: Record<string, unknown> =
      typeof idClaims.email === 'string'
        ? idClaims
        : { ...(await oidc.fetchUserInfo(await config(), tokens.access_token, idClaims.sub)), ...idClaims };
    const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : undefined;
    if (!email)
      throw new Refusal(403, 'The identity provider did not send your email address (ask for the "email" scope).');
    if (claims.email_verified !== true)
      throw new Refusal(403, `The identity provider has not verified ${email}: only verified addresses may sign in.`);
    const name = (typeof claims.name === 'string' && claims.name.trim().slice(0, 200)) || email.split('@')[0];
    const account = deps.account();
    let user = await store.findUserByEmail(deps.db, account, email);
    if (!user) {
      const invite = await deps.signIn.pendingInviteOf(account, email);
      if (invite) user = await deps.signIn.fromInvite(invite, name, null);
      else if (s.autoCreate) user = await create(account, email, name);
      else
        throw new Refusal(
          403,
          `${email} has no login here. Ask an admin of this Orrery to invite you (or to turn on ORRERY_OIDC_AUTO_CREATE).`,
        );
    }
    if (user.status !== 'active') throw new Refusal(403, `${email} is suspended here: ask an admin of the account.`);
    if (s.rolesClaim) await applyRoles(user, claims[s.rolesClaim]);
    return user;
  }

  async function create(account: string, email: string, name: string): Promise<UserRow> {
    const project = s.defaultProject
      ? await store.getProject(deps.db, account, s.defaultProject)
      : (await store.listProjects(deps.db, account))[0];
    if (!project) throw new Refusal(500, `ORRERY_OIDC_DEFAULT_PROJECT names no project (${s.defaultProject})`);
    const row = deps.users.newUserRow(account, email, name, false, 'oidc');
    await deps.db.transaction().execute(async (trx) => {
      await store.insertUser(trx, row);
      await store.setMembership(trx, {
        user_id: row.id,
        project_id: project.id,
        account_id: account,
        role: s.defaultRole,
        created_at: nowIso(),
      });
    });
    return row;
  }

  /** `project:role` strings (a project id or namespace), or a bare role for the default project. */
  async function applyRoles(user: UserRow, claim: unknown): Promise<void> {
    if (claim === undefined) return;
    const values = (Array.isArray(claim) ? claim : [claim])
      .filter((v): v is string => typeof v === 'string')
      .slice(0, 100);
    const projects = await store.listProjects(deps.db, user.account_id);
    for (const v of values) {
      const [a, b] = v.includes(':') ? v.split(':', 2) : [undefined, v];
      const role = b as KeyRole;
      if (!(KEY_ROLES as readonly string[]).includes(role) || role === 'admin') continue;
      const project =
        a === undefined
          ? s.defaultProject
            ? projects.find((x) => x.id === s.defaultProject)
            : projects[0]
          : projects.find((x) => x.id === a || x.namespace === a);
      if (!project) continue;
      await store.setMembership(deps.db, {
        user_id: user.id,
        project_id: project.id,
        account_id: user.account_id,
        role,
        created_at: nowIso(),
      });
    }
    deps.sessions.forgetUser(user.id);
  }
}

const escape = (t: string) => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(reply: FastifyReply, status: number, message: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(
      `<!doctype html><html><head><meta charset="utf-8"><title>Sign-in refused</title></head><body><h1>Sign-in refused</h1><p id="reason">${escape(message)}</p><p><a href="/">Back to the sign-in page</a></p></body></html>`,
    );
}
