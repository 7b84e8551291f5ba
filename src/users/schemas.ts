/** Wire shapes of users, invitations and sessions (the client's User and UserInviteToken, plus Orrery's fields). */
import { Type } from '@sinclair/typebox';
import { KEY_ROLES } from '../auth/principal.ts';

const Role = Type.Union(KEY_ROLES.map((r) => Type.Literal(r)));
const RoleInput = Type.String({ maxLength: 40, description: `One of ${KEY_ROLES.join(', ')} (admin: account admin)` });
const Email = Type.String({ maxLength: 320 });
const Token = Type.String({ maxLength: 100, description: 'The token of the link (after #token= in it)' });
const Password = Type.String({ maxLength: 256 });

export const UserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('suspended')]),
  account_admin: Type.Boolean({ description: 'Admin of every project of the account' }),
  projects: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: Role })),
  sign_in_provider: Type.Optional(Type.String()),
  has_password: Type.Boolean(),
  last_sign_in_at: Type.Union([Type.String(), Type.Null()]),
  created_by: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const UserUpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('suspended')])),
    account_admin: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const MembershipParams = Type.Object({
  id: Type.String({ minLength: 1 }),
  project: Type.String({ minLength: 1 }),
});
export const MembershipBody = Type.Object({ role: RoleInput }, { additionalProperties: false });

export const InviteBody = Type.Object(
  {
    email: Email,
    role: RoleInput,
    project: Type.Optional(
      Type.String({ maxLength: 100, description: "Project id; defaults to the caller's project" }),
    ),
  },
  { additionalProperties: false },
);

export const InviteResultSchema = Type.Object({
  action: Type.Union([Type.Literal('invited'), Type.Literal('added')]),
  id: Type.Optional(Type.String()),
  link: Type.Optional(Type.String({ description: 'The invitation link: single use, expires' })),
  expires: Type.Optional(Type.String()),
  mail: Type.Optional(Type.Union([Type.Literal('sent'), Type.Literal('failed'), Type.Literal('not_configured')])),
});

const Ref = Type.Object({ id: Type.String(), name: Type.String() });

export const InviteSchema = Type.Object({
  id: Type.String(),
  type: Type.Literal('user-invite'),
  data: Type.Object({
    email: Type.String(),
    role: Role,
    account: Ref,
    project: Type.Optional(Ref),
    invited_by: Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }),
  }),
  expires: Type.String(),
  account: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const ResetLinkSchema = Type.Object({
  link: Type.String(),
  expires: Type.String(),
  mail: Type.Union([Type.Literal('sent'), Type.Literal('failed'), Type.Literal('not_configured')]),
});

export const LoginBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false });
export const AcceptBody = Type.Object(
  { token: Token, name: Type.String({ maxLength: 200 }), password: Type.Optional(Password) },
  { additionalProperties: false },
);
export const TokenBody = Type.Object({ token: Token }, { additionalProperties: false });
export const ResetBody = Type.Object({ token: Token, password: Password }, { additionalProperties: false });
export const SessionTokenBody = Type.Union([
  Type.Object({ project: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
  Type.Null(),
]);

const SessionUserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  account_admin: Type.Boolean(),
});

export const SessionSchema = Type.Object({
  user: SessionUserSchema,
  projects: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: Role })),
  csrf_token: Type.String({
    description: 'Send it as the x-csrf-token header on every POST made with the session cookie',
  }),
  expires_at: Type.String({ description: 'The absolute end of the session' }),
  idle_timeout: Type.Integer({ description: 'Seconds without use after which the session ends' }),
});

export const SessionTokenSchema = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
});

export const InviteInfoSchema = Type.Object({
  email: Type.String(),
  role: Type.String(),
  project: Type.Union([Type.String(), Type.Null()]),
  /** The project's name, so the page can say where the role applies (null: account admin). */
  project_name: Type.Union([Type.String(), Type.Null()]),
  expires: Type.String(),
});

export const AuthConfigSchema = Type.Object({
  password: Type.Boolean(),
  sso: Type.Boolean(),
  sso_url: Type.Optional(Type.String()),
});
