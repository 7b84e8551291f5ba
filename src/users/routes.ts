/** /account/members, /account/invites, /users: parse, call the users service, answer. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { UsersService } from './service.ts';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import {
  InviteBody,
  InviteResultSchema,
  InviteSchema,
  MembershipBody,
  MembershipParams,
  ResetLinkSchema,
  UserSchema,
  UserUpdateBody,
} from './schemas.ts';

export const userRoutes: FastifyPluginAsyncTypebox<{ users: UsersService }> = async (app, { users }) => {
  const tags = ['users'];
  app.get(
    '/account/members',
    {
      schema: {
        tags,
        summary:
          "The account's users (account.members()): all of them for an admin, else those of the caller's project",
        response: { 200: Type.Array(UserSchema), ...errorResponses(401) },
      },
    },
    (req) => users.members(principalOf(req)),
  );

  app.post(
    '/account/invites',
    {
      schema: {
        tags,
        summary:
          'Invite someone by email with a role in a project (account.inviteUser); answers the single-use link, mailed when SMTP is set',
        body: InviteBody,
        response: { 200: InviteResultSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => users.invite(principalOf(req), req.body),
  );

  app.get(
    '/account/invites',
    {
      schema: {
        tags,
        summary: 'The pending invitations (account.listInvites), never their link',
        response: { 200: Type.Array(InviteSchema), ...errorResponses(401, 403) },
      },
    },
    (req) => users.invites(principalOf(req)),
  );

  app.delete(
    '/account/invites/:id',
    {
      schema: {
        tags,
        summary: 'Revoke an invitation (account.rejectInvite): its link stops working',
        params: IdParams,
        response: { 200: Type.Object({ status: Type.Literal('deleted') }), ...errorResponses(401, 403, 404) },
      },
    },
    (req) => users.revokeInvite(principalOf(req), req.params.id),
  );

  app.get(
    '/users/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve a user (users.retrieve)',
        params: IdParams,
        response: { 200: UserSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => users.get(principalOf(req), req.params.id),
  );

  app.put(
    '/users/:id',
    {
      schema: {
        tags,
        summary: 'Update a user: name, status (suspended ends their sessions at once), account_admin',
        params: IdParams,
        body: UserUpdateBody,
        response: { 200: UserSchema, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    (req) => users.update(principalOf(req), req.params.id, req.body),
  );

  app.delete(
    '/users/:id',
    {
      schema: {
        tags,
        summary: 'Remove a user: their sessions end at once, their personal API keys are deleted',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 403, 404, 409) },
      },
    },
    (req) => users.remove(principalOf(req), req.params.id),
  );

  app.put(
    '/users/:id/projects/:project',
    {
      schema: {
        tags,
        summary: "Set a user's role in a project",
        params: MembershipParams,
        body: MembershipBody,
        response: { 200: UserSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => users.setRole(principalOf(req), req.params.id, req.params.project, req.body.role),
  );

  app.delete(
    '/users/:id/projects/:project',
    {
      schema: {
        tags,
        summary: 'Take a user out of a project',
        params: MembershipParams,
        response: { 200: UserSchema, ...errorResponses(401, 403, 404) },
      },
    },
    (req) => users.removeRole(principalOf(req), req.params.id, req.params.project),
  );

  app.post(
    '/users/:id/password-reset',
    {
      schema: {
        tags,
        summary: 'Issue a single-use link that sets a new password (and lifts a lockout)',
        params: IdParams,
        response: { 200: ResetLinkSchema, ...errorResponses(401, 403, 404) },
      },
    },
    (req) => users.resetLink(principalOf(req), req.params.id),
  );
};
