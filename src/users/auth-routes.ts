/**
 * /auth/*: signing in and out, the session, and the console's tokens. A public context (style F1):
 * the password, the link's token or the session cookie is the credential. Every state change
 * made with the cookie needs the session's CSRF token; a request from another origin is refused.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { Forbidden } from '../util/errors.ts';
import { errorResponses } from '../http/schemas.ts';
import type { Sessions, SessionUser } from './sessions.ts';
import type { SignIn } from './sign-in.ts';
import type { UserRow } from './store.ts';
import type { UserSettings } from './settings.ts';
import { clearSessionCookie, isSecure, readSessionCookie, setSessionCookie } from './cookies.ts';
import {
  AcceptBody,
  AuthConfigSchema,
  InviteInfoSchema,
  LoginBody,
  ResetBody,
  SessionSchema,
  SessionTokenBody,
  SessionTokenSchema,
  TokenBody,
} from './schemas.ts';

export interface AuthRouteDeps {
  sessions: Sessions;
  signIn: SignIn;
  settings: UserSettings;
  publicUrl: () => string;
  /** Whether "Sign in with SSO" is offered (oidc.ts registers its routes). */
  sso: boolean;
}

export const authPublicRoutes: FastifyPluginAsyncTypebox<AuthRouteDeps> = async (app, deps) => {
  const { sessions, signIn, settings } = deps;
  const secure = () => isSecure(deps.publicUrl());
  const tags = ['sign-in'];

  /** Browsers send Origin on cross-site POSTs: one that is not ours is refused before any work. */
  const sameOrigin = (req: FastifyRequest) => {
    const origin = req.headers.origin;
    if (origin && origin !== new URL(deps.publicUrl()).origin)
      throw new Forbidden(
        `requests from ${origin.slice(0, 200)} are refused: sign in from ${new URL(deps.publicUrl()).origin}`,
      );
  };
  const cookieSession = (req: FastifyRequest) => sessions.fromSecret(readSessionCookie(req, secure()));
  const withCsrf = async (req: FastifyRequest): Promise<SessionUser> => {
    sameOrigin(req);
    const s = await cookieSession(req);
    const sent = req.headers['x-csrf-token'];
    sessions.checkCsrf(s, typeof sent === 'string' ? sent : undefined);
    return s;
  };
  const begin = async (req: FastifyRequest, reply: FastifyReply, user: UserRow, method: string) => {
    const { secret, session } = await sessions.start(user, method, req.ip);
    setSessionCookie(reply, secure(), secret, settings.sessionMaxSeconds);
    return describe({ session, user });
  };
  const describe = async (s: SessionUser) => ({
    user: { id: s.user.id, email: s.user.email, name: s.user.name, account_admin: !!s.user.account_admin },
    projects: await sessions.projectsOf(s.user),
    csrf_token: s.session.csrf_token,
    expires_at: s.session.expires_at,
    idle_timeout: settings.sessionIdleSeconds,
  });

  app.get(
    '/auth/config',
    { schema: { tags, summary: 'How one may sign in here', response: { 200: AuthConfigSchema } } },
    async () => ({ password: true, sso: deps.sso, ...(deps.sso ? { sso_url: '/auth/oidc/login' } : {}) }),
  );

  app.post(
    '/auth/login',
    {
      schema: {
        tags,
        summary:
          'Sign in with email and password: sets the session cookie (rate-limited; locks after repeated failures)',
        body: LoginBody,
        response: { 200: SessionSchema, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (req, reply) => {
      sameOrigin(req);
      signIn.rateLimit(req.ip);
      const user = await signIn.password(req.body.email, req.body.password);
      return begin(req, reply, user, 'password');
    },
  );

  app.get(
    '/auth/session',
    {
      schema: {
        tags,
        summary: 'The signed-in user, their projects and roles, and the CSRF token of the session',
        response: { 200: SessionSchema, ...errorResponses(401) },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return describe(await cookieSession(req));
    },
  );

  app.post(
    '/auth/token',
    {
      schema: {
        tags,
        summary:
          'A short-lived JWT for the API, as the signed-in user, in one of their projects (cookie + x-csrf-token)',
        body: Type.Optional(SessionTokenBody),
        response: { 200: SessionTokenSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return sessions.issue(await withCsrf(req), req.body?.project);
    },
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        tags,
        summary: 'Sign out: the session ends on the server and its cookie is cleared (cookie + x-csrf-token)',
        response: { 200: Type.Object({ status: Type.Literal('signed_out') }), ...errorResponses(401, 403) },
      },
    },
    async (req, reply) => {
      await sessions.end(await withCsrf(req));
      clearSessionCookie(reply, secure());
      return { status: 'signed_out' as const };
    },
  );

  app.post(
    '/auth/invites/describe',
    {
      schema: {
        tags,
        summary: 'What an invitation link is for (email, role, project), before accepting it',
        body: TokenBody,
        response: { 200: InviteInfoSchema, ...errorResponses(400, 401, 429) },
      },
    },
    async (req) => {
      signIn.rateLimit(req.ip);
      return signIn.describeInvite(req.body.token);
    },
  );

  app.post(
    '/auth/invites/accept',
    {
      schema: {
        tags,
        summary: 'Accept an invitation: creates the user with the bound role and signs them in',
        body: AcceptBody,
        response: { 200: SessionSchema, ...errorResponses(400, 401, 403, 409, 429) },
      },
    },
    async (req, reply) => {
      sameOrigin(req);
      signIn.rateLimit(req.ip);
      return begin(req, reply, await signIn.acceptInvite(req.body), 'invite');
    },
  );

  app.post(
    '/auth/password-reset',
    {
      schema: {
        tags,
        summary: "Set a new password from an admin's reset link: ends the user's other sessions and signs them in",
        body: ResetBody,
        response: { 200: SessionSchema, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (req, reply) => {
      sameOrigin(req);
      signIn.rateLimit(req.ip);
      const user = await signIn.resetPassword(req.body);
      sessions.forgetUser(user.id); // its other sessions ended with the reset
      return begin(req, reply, user, 'reset');
    },
  );
};
