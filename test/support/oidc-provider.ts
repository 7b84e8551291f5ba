/**
 * A real OpenID Connect provider (oidc-provider) on a loopback port, for the SSO tests. Its login
 * step signs in whichever account the test names (`as`), with no form; consent is granted for the
 * scopes asked. Accounts carry the claims the test gives them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

interface OidcAccount {
  email: string;
  email_verified: boolean;
  name: string;
  groups?: string[];
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, OidcAccount>;
  /** The account the next login signs in as. */
  as: string;
  close(): Promise<void>;
}

export async function startOidcProvider(redirectUri: () => string): Promise<TestOidcProvider> {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state: TestOidcProvider = {
    issuer,
    clientId: 'orrery-test',
    clientSecret: 'a-client-secret-for-the-tests-only',
    accounts: new Map(),
    as: '',
    close: () => new Promise((r) => server.close(() => r())),
  };
  // Built at the first request: Orrery's callback URL is known only once it listens.
  let built: { provider: any; callback: (req: unknown, res: unknown) => void } | undefined;
  const build = () => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: state.clientId,
          client_secret: state.clientSecret,
          redirect_uris: [redirectUri()],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
      features: { devInteractions: { enabled: false } },
      pkce: { required: () => true },
      cookies: { keys: ['oidc-test-cookie-key'] },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      findAccount: async (_ctx: unknown, id: string) => {
        const a = state.accounts.get(id);
        return a && { accountId: id, claims: async () => ({ sub: id, ...a }) };
      },
      // Consent for what was asked, without a screen.
      loadExistingGrant: async (ctx: any) => {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope('openid email profile');
        grant.addOIDCClaims(['email', 'email_verified', 'name', 'groups']);
        await grant.save();
        return grant;
      },
    });
    return { provider, callback: provider.callback() };
  };
  server.on('request', (req, res) => {
    const { provider, callback } = (built ??= build());
    if (req.url?.startsWith('/interaction/')) {
      provider
        .interactionFinished(req, res, { login: { accountId: state.as } }, { mergeWithLastSubmission: false })
        .catch((err: Error) => {
          res.statusCode = 500;
          res.end(String(err));
        });
      return;
    }
    callback(req, res);
  });
  return state;
}
