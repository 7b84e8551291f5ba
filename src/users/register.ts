/** The users feature: its services, API routes (members, invitations, users) and public /auth routes. */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { AuditLog } from '../audit/log.ts';
import type { AuthService } from '../auth/service.ts';
import type { ProjectRowsDeleter } from '../db/project-rows.ts';
import { usersOf } from './store.ts';
import { UsersService } from './service.ts';
import { Sessions } from './sessions.ts';
import { SignIn } from './sign-in.ts';
import { Mailer } from './mail.ts';
import { userRoutes } from './routes.ts';
import { authPublicRoutes } from './auth-routes.ts';
import { checkOidcSettings, registerOidc } from './oidc.ts';

export interface UsersDeps {
  config: Config;
  database: OpenedDatabase;
  audit: AuditLog;
  auth: AuthService;
  jwtKey: Uint8Array;
  log: FastifyBaseLogger;
}

export function createUsers(deps: UsersDeps) {
  const { config } = deps;
  const db = usersOf(deps.database.db);
  const settings = config.users;
  if (settings.oidc) checkOidcSettings(settings.oidc); // a wrong setting stops the start, before any route
  const publicUrl = () => config.publicUrl;
  const mailer = new Mailer(settings.smtp, (err) => deps.log.warn({ err }, 'users: could not send mail'));
  const users = new UsersService(db, settings, publicUrl, mailer, deps.audit, (ids) => deps.auth.keysChanged(ids));
  const sessions = new Sessions(db, settings, deps.jwtKey, publicUrl);
  const signIn = new SignIn(db, settings, users, deps.audit);
  users.onUserChanged((id) => sessions.forgetUser(id));
  let account = '';
  deps.auth.useUserTokens((claims) => sessions.principalOf(claims));

  /** A deleted project's memberships and invitations go with it. */
  const deleteProjectRows: ProjectRowsDeleter = async (trx, s) => {
    const t = usersOf(trx);
    const m = await t.deleteFrom('user_memberships').where('project_id', '=', s.project).executeTakeFirst();
    const l = await t.deleteFrom('user_links').where('project_id', '=', s.project).executeTakeFirst();
    return { user_memberships: Number(m.numDeletedRows), user_links: Number(l.numDeletedRows) };
  };

  return {
    users,
    sessions,
    deleteProjectRows,
    start: (id: string) => {
      account = id;
      return users.ensureAdmins(id);
    },
    register: (authed: FastifyInstance) => authed.register(userRoutes, { users }),
    registerPublic: async (app: FastifyInstance) => {
      await app.register(authPublicRoutes, { sessions, signIn, settings, publicUrl, sso: !!settings.oidc });
      if (settings.oidc)
        registerOidc(app, {
          db,
          settings: { ...settings, oidc: settings.oidc },
          sessions,
          signIn,
          users,
          jwtKey: deps.jwtKey,
          publicUrl,
          account: () => account,
        });
    },
    close: () => mailer.close(),
  };
}

export type Users = ReturnType<typeof createUsers>;
