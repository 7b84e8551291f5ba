/**
 * OIDC single sign-on end to end over HTTP against a real provider (oidc-provider) on loopback:
 * the authorization code flow with PKCE, a user matched by verified email, an invitation accepted
 * by signing in, creation on first sign-in when allowed, roles from a claim, and refusals (an
 * unknown or unverified email, a tampered state, nonce or PKCE challenge) on a page that says why.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { userSettingsOf } from '../../src/users/settings.ts';
import { Browser } from './browser-session.ts';

/** Cookies per origin, as a browser keeps them (paths and expiry left out: one flow at a time). */
class Jar {
  private readonly byOrigin = new Map<string, Map<string, string>>();
  header(url: URL): string {
    return [...(this.byOrigin.get(url.origin) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(url: URL, res: Response): void {
    const jar = this.byOrigin.get(url.origin) ?? new Map<string, string>();
    this.byOrigin.set(url.origin, jar);
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (!value || attrs.some((a) => /max-age=0\b/i.test(a.trim()))) jar.delete(name);
      else jar.set(name, value);
    }
  }
  get(origin: string, name: string): string | undefined {
    return this.byOrigin.get(origin)?.get(name);
  }
}

interface Hop {
  url: URL;
  res: Response;
}

/** Follows redirects as a browser would; `rewrite` may change a URL before it is fetched. */
async function browse(
  start: string,
  jar: Jar,
  rewrite: (u: URL) => URL = (u) => u,
): Promise<{ last: Hop; body: string }> {
  let url = new URL(start);
  for (let i = 0; i < 20; i++) {
    url = rewrite(url);
    const res = await fetch(url, { headers: { cookie: jar.header(url) }, redirect: 'manual' });
    jar.take(url, res);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.arrayBuffer();
      url = new URL(location, url);
      continue;
    }
    return { last: { url, res }, body: await res.text() };
  }
  throw new Error('too many redirects');
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: OIDC single sign-on`, () => {
    let srv: TestServer;
    let idp: TestOidcProvider;
    let otherProject: { id: string; namespace: string };

    const signInAs = async (account: string, rewrite?: (u: URL) => URL) => {
      idp.as = account;
      const jar = new Jar();
      const { last, body } = await browse(`${srv.url}/auth/oidc/login`, jar, rewrite);
      const cookie = jar.get(srv.url, 'orrery_session');
      return { status: last.res.status, url: last.url, body, cookie };
    };

    before(async () => {
      idp = await startOidcProvider(() => `${srv.url}/auth/oidc/callback`);
      idp.accounts.set('alice', { email: 'Alice@Example.com', email_verified: true, name: 'Alice SSO' });
      idp.accounts.set('bob', { email: 'bob@example.com', email_verified: true, name: 'Bob' });
      idp.accounts.set('mallory', { email: 'mallory@example.com', email_verified: false, name: 'Mallory' });
      idp.accounts.set('carol', { email: 'carol@example.com', email_verified: true, name: 'Carol' });
      idp.accounts.set('dave', { email: 'dave@example.com', email_verified: true, name: 'Dave', groups: [] });
      srv = await startTestServer(dialect, {
        users: userSettingsOf({
          ORRERY_OIDC_ISSUER: idp.issuer,
          ORRERY_OIDC_CLIENT_ID: idp.clientId,
          ORRERY_OIDC_CLIENT_SECRET: idp.clientSecret,
          ORRERY_OIDC_ROLES_CLAIM: 'groups',
        }),
      });
      const p = await srv.api('POST', '/api/v1/projects', { name: 'SSO other', namespace: 'sso-other' });
      otherProject = { id: p.body.id, namespace: p.body.namespace };
    });
    after(async () => {
      await srv?.close();
      await idp?.close();
    });

    it('the sign-in page is told SSO is on', async () => {
      const r = await new Browser(srv).call('GET', '/auth/config');
      assert.deepEqual(r.body, { password: true, sso: true, sso_url: '/auth/oidc/login' });
    });

    it('an unknown email is refused with a page that says why; an invitation lets the person in with its role', async () => {
      const refused = await signInAs('alice');
      assert.equal(refused.status, 403);
      assert.match(refused.body, /alice@example\.com has no login here/);
      assert.equal(refused.cookie, undefined);

      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'alice@example.com', role: 'executor' });
      assert.equal(inv.status, 200);
      const ok = await signInAs('alice');
      assert.equal(ok.status, 200, ok.body.slice(0, 500));
      assert.equal(ok.url.pathname, '/', 'lands on the console');
      assert.ok(ok.cookie, 'a session cookie');
      const b = new Browser(srv);
      b.cookie = `orrery_session=${ok.cookie}`;
      const session = await b.call('GET', '/auth/session');
      assert.equal(session.status, 200);
      assert.equal(session.body.user.email, 'alice@example.com');
      assert.equal(session.body.user.name, 'Alice SSO');
      assert.deepEqual(
        session.body.projects.map((x: any) => x.role),
        ['executor'],
      );
      const jwt = await b.token();
      assert.equal((await srv.api('GET', '/api/v1/runs', undefined, jwt)).status, 200);
      const members = (await srv.client().account.members()) as any[];
      assert.equal(members.find((m) => m.email === 'alice@example.com').sign_in_provider, 'oidc');
      // Signing in again matches the same user.
      const again = await signInAs('alice');
      assert.equal(again.status, 200);
      assert.equal(
        ((await srv.client().account.members()) as any[]).filter((m) => m.email === 'alice@example.com').length,
        1,
      );
    });

    it('an address the provider has not verified is refused', async () => {
      await srv.api('POST', '/api/v1/account/invites', { email: 'mallory@example.com', role: 'reader' });
      const r = await signInAs('mallory');
      assert.equal(r.status, 403);
      assert.match(r.body, /has not verified mallory@example\.com/);
    });

    it('a tampered state, nonce or PKCE challenge is refused', async () => {
      await srv.api('POST', '/api/v1/account/invites', { email: 'bob@example.com', role: 'reader' });
      const tamper = (param: string, value: string, host: 'idp' | 'orrery') => (u: URL) => {
        const target = host === 'idp' ? new URL(idp.issuer).origin : srv.url;
        if (u.origin === target && u.searchParams.has(param)) {
          const copy = new URL(u);
          copy.searchParams.set(param, value);
          return copy;
        }
        return u;
      };
      const state = await signInAs('bob', tamper('state', 'forged-state', 'orrery'));
      assert.equal(state.status, 400);
      assert.match(state.body, /state/i);
      assert.equal(state.cookie, undefined);
      const nonce = await signInAs('bob', tamper('nonce', 'forged-nonce', 'idp'));
      assert.equal(nonce.status, 400);
      assert.match(nonce.body, /nonce/i);
      assert.equal(nonce.cookie, undefined);
      const pkce = await signInAs('bob', tamper('code_challenge', 'A'.repeat(43), 'idp'));
      assert.equal(pkce.status, 400);
      assert.equal(pkce.cookie, undefined);
      // A callback with no flow started here.
      const stray = await fetch(`${srv.url}/auth/oidc/callback?code=x&state=y`);
      assert.equal(stray.status, 400);
      assert.match(await stray.text(), /not started here/);
      // Untampered, Bob gets in.
      assert.equal((await signInAs('bob')).status, 200);
    });

    it('with auto-creation on, a first sign-in creates the user with the default role; the roles claim sets projects', async () => {
      srv.orrery.config.users.oidc!.autoCreate = true;
      try {
        idp.accounts.set('carol', {
          email: 'carol@example.com',
          email_verified: true,
          name: 'Carol',
          groups: [`${otherProject.namespace}:developer`, 'nowhere:developer', 'sso-other:emperor'],
        });
        const r = await signInAs('carol');
        assert.equal(r.status, 200, r.body.slice(0, 300));
        const carol = ((await srv.client().account.members()) as any[]).find((m) => m.email === 'carol@example.com');
        const roles = Object.fromEntries(carol.projects.map((x: any) => [x.id, x.role]));
        assert.deepEqual(roles, { [srv.orrery.bootstrap.project.id]: 'reader', [otherProject.id]: 'developer' });
      } finally {
        srv.orrery.config.users.oidc!.autoCreate = false;
      }
    });

    it('a suspended user cannot sign in with SSO', async () => {
      const alice = ((await srv.client().account.members()) as any[]).find((m) => m.email === 'alice@example.com');
      await srv.api('PUT', `/api/v1/users/${alice.id}`, { status: 'suspended' });
      const r = await signInAs('alice');
      assert.equal(r.status, 403);
      assert.match(r.body, /suspended/);
    });
  });
}
