/**
 * People in the console, in Chromium, on SQLite and PostgreSQL: the sign-in page (password, SSO,
 * an API key as the secondary way), single sign-on through a real OIDC provider (oidc-provider) on
 * loopback, wrong passwords and the lockout said plainly, accepting an invitation, an expired one,
 * a suspended user's open console bounced at its next request, the project switcher, and the
 * Members screen (invite, role, suspend, reset link, remove, revoke).
 *
 * The session is a cookie of the browser context: each test starts with the context's cookies
 * cleared and a fresh tab, so no test inherits another's sign-in.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { TEST_DIALECTS } from '../support/server.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { userSettingsOf } from '../../src/users/settings.ts';
import { Browser, tokenOf } from '../users/browser-session.ts';
import {
  assertNoHorizontalOverflow,
  atPhoneWidth,
  checkA11y,
  screenshot,
  sessionStorageOf,
  signInWithPassword,
  signOut,
  startConsole,
  type ConsoleHarness,
} from './browser.ts';

const PASSWORD = 'correct horse battery staple';

/** The `project` and `role` claims of the tab's current JWT. */
async function claimsOf(page: Page): Promise<{ project: { id: string }; role: string; user_id?: string }> {
  const { token } = JSON.parse((await sessionStorageOf(page))['orrery.token']) as { token: string };
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as never;
}

/** Polls `check` until true, failing with `what` after a generous cap (never a guessed sleep). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting: ${what}`);
}

for (const dialect of TEST_DIALECTS) {
  describe(`console users and SSO (${dialect})`, () => {
    let h: ConsoleHarness;
    let idp: TestOidcProvider;
    let otherProject: string;

    /** Invites `email` (admin key) and accepts over HTTP with PASSWORD: a user who can sign in. */
    const join = async (email: string, role: string, project?: string) => {
      const inv = await h.srv.api('POST', '/api/v1/account/invites', { email, role, ...(project ? { project } : {}) });
      assert.equal(inv.status, 200, JSON.stringify(inv.body));
      const acc = await new Browser(h.srv).call('POST', '/auth/invites/accept', {
        token: tokenOf(inv.body.link),
        name: `${email.split('@')[0]} person`,
        password: PASSWORD,
      });
      assert.equal(acc.status, 200, JSON.stringify(acc.body));
      return acc.body.user as { id: string; email: string; name: string };
    };

    /** A fresh tab with no session cookie left from an earlier test. */
    const freshPage = async () => {
      await h.context.clearCookies();
      return h.newPage();
    };

    before(async () => {
      idp = await startOidcProvider(() => `${h.srv.url}/auth/oidc/callback`);
      idp.accounts.set('olivia', { email: 'olivia@example.com', email_verified: true, name: 'Olivia SSO' });
      h = await startConsole({
        dialect,
        allowOrigins: [idp.issuer],
        config: {
          users: userSettingsOf({
            ORRERY_OIDC_ISSUER: idp.issuer,
            ORRERY_OIDC_CLIENT_ID: idp.clientId,
            ORRERY_OIDC_CLIENT_SECRET: idp.clientSecret,
            // Every sign-in of this file comes from 127.0.0.1: the lockout is what is tested here.
            ORRERY_LOGIN_RATE: '1000',
          }),
        },
      });
      otherProject = (await h.srv.api('POST', '/api/v1/projects', { name: 'Telescope project' })).body.id;
    });
    after(async () => {
      await h?.close();
      await idp?.close();
    });

    it('the sign-in page offers email and password, SSO, and an API key as the secondary way; it passes axe', async () => {
      const page = await freshPage();
      await page.goto(h.url('/runs'));
      await page.waitForURL((u) => u.pathname === '/signin');
      await page.getByRole('heading', { level: 1, name: 'Sign in to Orrery' }).waitFor();
      await page.getByRole('link', { name: 'Sign in with SSO' }).waitFor();
      assert.ok(await page.getByLabel('Email').isVisible());
      assert.ok(await page.getByLabel('Password', { exact: true }).isVisible());
      assert.equal(await page.getByLabel('API key').count(), 0, 'the key form is closed until asked for');
      const toggle = page.getByRole('button', { name: 'Use an API key instead' });
      assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
      await checkA11y(page, 'sign-in');
      if (dialect === 'sqlite') await screenshot(page, 'signin');
      await toggle.click();
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
      await page.getByLabel('API key').waitFor();
      await checkA11y(page, 'sign-in with the key form open');
      await atPhoneWidth(page, () => assertNoHorizontalOverflow(page));
      await page.close();
    });

    it('SSO through the console: lands on the runs page as that user, what they make is theirs in the audit trail, sign out ends it', async () => {
      const inv = await h.srv.api('POST', '/api/v1/account/invites', {
        email: 'olivia@example.com',
        role: 'developer',
      });
      assert.equal(inv.status, 200);
      idp.as = 'olivia';
      const page = await freshPage();
      await page.goto(h.url('/signin'));
      const seen: string[] = [];
      page.on('request', (r) => {
        if (r.isNavigationRequest()) seen.push(new URL(r.url()).origin);
      });
      await page.getByRole('link', { name: 'Sign in with SSO' }).click();
      await page.waitForURL((u) => u.pathname === '/runs');
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      assert.ok(seen.includes(new URL(idp.issuer).origin), `went through the identity provider: ${seen.join(', ')}`);
      const banner = page.getByRole('banner');
      await banner.getByText('Olivia SSO').waitFor();
      await banner.getByText('olivia@example.com').waitFor();
      await banner.getByText('Default project · developer').waitFor();
      assert.equal(await page.getByRole('link', { name: 'Members' }).count(), 0, 'no Members screen for a developer');
      const cookies = await h.context.cookies(h.url());
      const session = cookies.find((c) => c.name === 'orrery_session');
      assert.ok(session?.httpOnly, 'an HttpOnly session cookie');
      assert.equal(session.sameSite, 'Lax');
      assert.ok(!JSON.stringify(await sessionStorageOf(page)).includes(session.value), 'the tab never holds it');

      // Something the audit trail attributes to Olivia: an environment made in the console.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Environments' }).click();
      await page.getByRole('heading', { level: 1, name: 'Environments' }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill('Olivia env');
      await page.getByLabel('Provider').selectOption('test');
      await page.getByLabel('Default model').fill('echo');
      await page.getByRole('button', { name: 'Create environment' }).click();
      await page
        .getByRole('table', { name: 'Environments' })
        .getByRole('row', { name: /Olivia env/ })
        .waitFor();
      const envs = (await h.srv.api('GET', '/api/v1/environments')).body as Array<{ id: string; name: string }>;
      const env = envs.find((e) => e.name === 'Olivia env');
      assert.ok(env, 'the environment exists');
      const members = (await h.srv.client().account.members()) as unknown as Array<{ id: string; email: string }>;
      const olivia = members.find((m) => m.email === 'olivia@example.com')!;
      const trail = (await h.srv.client().auditTrail.list({ resourceId: env.id, limit: 10 } as never)) as unknown as {
        events: Array<{ action: string; principal_type: string; principal_id: string; details: any }>;
      };
      const created = trail.events.find((e) => e.action === 'create');
      assert.ok(created, JSON.stringify(trail.events));
      assert.equal(created.principal_type, 'user');
      assert.equal(created.principal_id, `user:${olivia.id}`);
      assert.equal(created.details.actor.email, 'olivia@example.com');

      await signOut(page);
      assert.equal(
        (await h.context.cookies(h.url())).find((c) => c.name === 'orrery_session'),
        undefined,
        'the cookie is cleared',
      );
      await page.goto(h.url('/runs'));
      await page.waitForURL((u) => u.pathname === '/signin');
      await page.getByLabel('Email').waitFor();

      // The page asked for before SSO is where the console goes after it (the provider returns to `/`).
      await page.goto(h.url(`/signin?redirect=${encodeURIComponent('/objects?q=report')}`));
      await page.getByRole('link', { name: 'Sign in with SSO' }).click();
      await page.getByRole('heading', { level: 1, name: 'Objects' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/objects');
      assert.equal(new URL(page.url()).searchParams.get('q'), 'report', 'with its search');
      await signOut(page);
      assert.deepEqual(h.pageErrors, [], 'no uncaught errors in the pages');
      await page.close();
    });

    it('SSO for an address with no login here is refused with a page that says why', async () => {
      idp.accounts.set('stranger', { email: 'stranger@example.com', email_verified: true, name: 'Stranger' });
      idp.as = 'stranger';
      const page = await freshPage();
      await page.goto(h.url('/signin'));
      await page.getByRole('link', { name: 'Sign in with SSO' }).click();
      await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
      assert.match(await page.locator('#reason').innerText(), /stranger@example\.com has no login here/);
      await page.getByRole('link', { name: 'Back to the sign-in page' }).click();
      await page.waitForURL((u) => u.pathname === '/signin');
      await page.close();
    });

    it('password sign-in lands on the runs page as that user; a redirect of this console is kept', async () => {
      const user = await join('paula@example.com', 'reader');
      const page = await freshPage();
      await signInWithPassword(page, h, 'paula@example.com', PASSWORD);
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      await page.getByRole('banner').getByText(user.name).waitFor();
      await page.getByRole('banner').getByText('Default project · reader').waitFor();
      const claims = await claimsOf(page);
      assert.equal(claims.role, 'reader');
      assert.equal(claims.user_id, user.id);
      assert.equal((await sessionStorageOf(page))['orrery.apiKey'], undefined, 'no key is kept');
      await checkA11y(page, 'runs as a user');
      // A reload asks the server for the session (the cookie), and stays signed in.
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      await signOut(page);

      await page.goto(h.url(`/signin?redirect=${encodeURIComponent('/objects')}`));
      await page.getByLabel('Email').fill('paula@example.com');
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Objects' }).waitFor();
      await signOut(page);
      await page.goto(h.url(`/signin?redirect=${encodeURIComponent('//evil.example/')}`));
      await page.getByLabel('Email').fill('paula@example.com');
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      assert.equal(new URL(page.url()).origin, new URL(h.url()).origin);
      await signOut(page);
      await page.close();
    });

    it('a wrong password says so; repeated failures lock the account, saying until when', async () => {
      await join('wanda@example.com', 'reader');
      const page = await freshPage();
      await page.goto(h.url('/signin'));
      const attempt = async (password: string) => {
        await page.getByLabel('Email').fill('wanda@example.com');
        await page.getByLabel('Password', { exact: true }).fill(password);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        // The field is emptied once the answer came: then the alert is the new one.
        await page.waitForFunction(() => (globalThis as any).document.getElementById('password').value === '');
        return page.getByRole('alert').innerText();
      };
      for (let i = 0; i < 5; i++) assert.equal(await attempt('not the password'), 'Wrong email or password.');
      assert.equal(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid'), 'true');
      // Locked: even the right password is refused, and the page says when to try again.
      const locked = await attempt(PASSWORD);
      assert.match(
        locked,
        /^Too many failed sign-ins: this account is locked\. Try again at \d{1,2}:\d\d(\s?[AP]M)? \(in 1[45] minutes\), or ask an admin for a password reset link\.$/,
      );
      assert.match(page.url(), /\/signin/);
      await checkA11y(page, 'sign-in with an error');
      await page.close();
    });

    it('an invitation link opens a page to set name and password, and ends signed in', async () => {
      const inv = await h.srv.api('POST', '/api/v1/account/invites', {
        email: 'ivan@example.com',
        role: 'executor',
        project: otherProject,
      });
      const page = await freshPage();
      await page.goto(inv.body.link);
      await page.getByRole('heading', { level: 1, name: 'Accept the invitation' }).waitFor();
      const intro = page.getByText('You are invited as');
      await intro.waitFor();
      assert.match(await intro.innerText(), /ivan@example\.com, with the role executor in Telescope project/);
      await checkA11y(page, 'accept invitation');
      await atPhoneWidth(page, () => assertNoHorizontalOverflow(page));
      await page.getByLabel('Your name').fill('Ivan Invited');
      await page.getByLabel('Password', { exact: true }).fill('short');
      await page.getByLabel('Repeat the password').fill('short');
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByRole('alert').filter({ hasText: 'The password must have 12 to 256 characters.' }).waitFor();
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByLabel('Repeat the password').fill(`${PASSWORD}!`);
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByRole('alert').filter({ hasText: 'The two passwords differ.' }).waitFor();
      await page.getByLabel('Repeat the password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      await page.getByRole('banner').getByText('Ivan Invited').waitFor();
      await page.getByRole('banner').getByText('Telescope project · executor').waitFor();
      assert.equal((await claimsOf(page)).project.id, otherProject);
      await signOut(page);

      // Used once: the same link now says so.
      await page.goto(inv.body.link);
      await page.getByRole('alert').filter({ hasText: 'This invitation link has already been used' }).waitFor();
      await page.close();
    });

    it('an expired invitation’s page says so, and offers the way to sign-in', async () => {
      const inv = await h.srv.api('POST', '/api/v1/account/invites', { email: 'late@example.com', role: 'reader' });
      await h.srv.orrery.database.db
        .updateTable('user_links' as never)
        .set({ expires_at: new Date(Date.now() - 60_000).toISOString() } as never)
        .where('id' as never, '=', inv.body.id as never)
        .execute();
      const page = await freshPage();
      await page.goto(inv.body.link);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match(await alert.innerText(), /^This invitation link expired at .+: ask an admin for a new one\.$/);
      assert.equal(await page.getByLabel('Your name').count(), 0, 'no form for a dead link');
      await checkA11y(page, 'expired invitation');
      await page.getByRole('link', { name: 'Go to sign-in' }).click();
      await page.waitForURL((u) => u.pathname === '/signin');
      // A link without its token says what is missing.
      await page.goto(h.url('/accept-invite'));
      await page.getByRole('alert').filter({ hasText: 'needs the whole invitation link' }).waitFor();
      await page.close();
    });

    it('a suspended user’s open console is sent to sign-in at its next request, saying why', async () => {
      const user = await join('sam@example.com', 'developer');
      const page = await freshPage();
      await signInWithPassword(page, h, 'sam@example.com', PASSWORD);
      // A screen that asks nothing by itself once loaded, so that the next request is the test's.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Environments' }).click();
      await page.getByRole('heading', { level: 1, name: 'Environments' }).waitFor();
      await page.getByRole('table', { name: 'Environments' }).waitFor();
      const put = await h.srv.api('PUT', `/api/v1/users/${user.id}`, { status: 'suspended' });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      // The next request of the open tab (its JWT has minutes left) is refused, and the tab signs out.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Objects' }).click();
      await page.waitForURL((u) => u.pathname === '/signin');
      await page
        .getByRole('status')
        .filter({ hasText: 'You were signed out: this user is suspended: ask an admin of the account' })
        .waitFor();
      assert.equal(new URL(page.url()).searchParams.get('redirect'), '/objects', 'and comes back there after');
      // Signing in again is refused too, saying why.
      await page.getByLabel('Email').fill('sam@example.com');
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: 'This user is suspended: ask an admin of the account.' })
        .waitFor();
      await page.close();
    });

    it('the project switcher moves a user among their projects, with their role in each', async () => {
      const user = await join('mia@example.com', 'developer');
      const role = await h.srv.api('PUT', `/api/v1/users/${user.id}/projects/${otherProject}`, { role: 'reader' });
      assert.equal(role.status, 200, JSON.stringify(role.body));
      const page = await freshPage();
      await signInWithPassword(page, h, 'mia@example.com', PASSWORD);
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      const switcher = page.getByRole('combobox', { name: 'Project' });
      const options = await switcher.getByRole('option').allInnerTexts();
      assert.deepEqual(options.sort(), ['Default project · developer', 'Telescope project · reader']);
      await switcher.selectOption({ label: 'Telescope project · reader' });
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      await page.waitForFunction(
        (id) => (globalThis as any).sessionStorage.getItem('orrery.project') === id,
        otherProject,
      );
      assert.equal(await page.getByRole('combobox', { name: 'Project' }).inputValue(), otherProject);
      const claims = await claimsOf(page);
      assert.equal(claims.project.id, otherProject);
      assert.equal(claims.role, 'reader');
      await signOut(page);
      await page.close();
    });

    it('Members: invite (link shown), revoke, change a role, suspend and reactivate, reset link, remove; passes axe', async () => {
      const admin = await join('root@example.com', 'admin');
      const target = await join('tess@example.com', 'developer');
      const page = await freshPage();
      await signInWithPassword(page, h, 'root@example.com', PASSWORD);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
      await page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
      const users = page.getByRole('table', { name: 'Users' });
      await users.getByRole('row', { name: /tess@example\.com/ }).waitFor();
      assert.match(await users.getByRole('row', { name: /root@example\.com/ }).innerText(), /\(you\)/);
      assert.equal(
        await page.getByRole('button', { name: 'Suspend root@example.com' }).count(),
        0,
        'an admin cannot suspend themself here',
      );

      // Invite: the link is shown to copy; the invitation is pending until revoked.
      const inviting = page.getByRole('region', { name: 'Invite someone' });
      await inviting.getByLabel('Email').fill('nina@example.com');
      await inviting.getByLabel('Role', { exact: true }).selectOption('reader');
      await inviting.getByLabel('Project', { exact: true }).selectOption({ label: 'Telescope project' });
      await inviting.getByRole('button', { name: 'Invite', exact: true }).click();
      await page.getByRole('heading', { name: 'Invitation for nina@example.com' }).waitFor();
      const link = await page.getByLabel('Invitation link', { exact: true }).inputValue();
      assert.ok(link.startsWith(`${h.srv.url}/accept-invite#token=`), link);
      const pending = page.getByRole('table', { name: 'Pending invitations' });
      const nina = pending.getByRole('row', { name: /nina@example\.com/ });
      await nina.waitFor();
      assert.match(await nina.innerText(), /reader\s+Telescope project/);
      await checkA11y(page, 'members');
      await atPhoneWidth(page, () => assertNoHorizontalOverflow(page));
      if (dialect === 'sqlite') await screenshot(page, 'members');
      await page.getByRole('button', { name: 'Revoke the invitation of nina@example.com' }).click();
      await nina.waitFor({ state: 'detached' });
      const invites = (await h.srv.client().account.listInvites()) as unknown as Array<{ data: { email: string } }>;
      assert.ok(!invites.some((i) => i.data.email === 'nina@example.com'), 'revoked on the server');
      const dead = await new Browser(h.srv).call('POST', '/auth/invites/describe', { token: tokenOf(link) });
      assert.equal(dead.status, 401, 'the revoked link no longer works');

      // A role per project.
      await page.getByLabel('Role of tess@example.com in Default project').selectOption('executor');
      const tess = async () =>
        ((await h.srv.client().account.members()) as unknown as Array<any>).find((m) => m.email === 'tess@example.com');
      await until(async () => (await tess()).projects[0]?.role === 'executor', 'the role is changed on the server');

      // Suspend, then reactivate.
      await page.getByRole('button', { name: 'Suspend tess@example.com' }).click();
      await page.getByRole('button', { name: 'Reactivate tess@example.com' }).waitFor();
      assert.equal((await tess()).status, 'suspended');
      const refused = await new Browser(h.srv).call('POST', '/auth/login', {
        email: 'tess@example.com',
        password: PASSWORD,
      });
      assert.equal(refused.status, 401);
      await page.getByRole('button', { name: 'Reactivate tess@example.com' }).click();
      await page.getByRole('button', { name: 'Suspend tess@example.com' }).waitFor();
      assert.equal((await tess()).status, 'active');

      // A password reset link, that works once.
      await page.getByRole('button', { name: 'Password reset link for tess@example.com' }).click();
      await page.getByRole('heading', { name: 'Password reset link for tess@example.com' }).waitFor();
      const reset = await page.getByLabel('Password reset link', { exact: true }).inputValue();
      assert.ok(reset.startsWith(`${h.srv.url}/reset-password#token=`), reset);
      const other = await h.browser.newContext({ baseURL: h.srv.url });
      try {
        const p2 = await other.newPage();
        await p2.goto(reset);
        await p2.getByRole('heading', { level: 1, name: 'Choose a new password' }).waitFor();
        await p2.getByLabel('Password', { exact: true }).fill('a brand new passphrase');
        await p2.getByLabel('Repeat the password').fill('a brand new passphrase');
        await p2.getByRole('button', { name: 'Set password' }).click();
        await p2.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      } finally {
        await other.close();
      }
      await page.getByRole('button', { name: 'Done' }).click();

      // Remove, after confirming: gone from the table and from the server.
      await page.getByRole('button', { name: 'Remove tess@example.com' }).click();
      const confirm = page.getByRole('alertdialog', { name: 'Remove tess@example.com?' });
      await confirm.getByRole('button', { name: 'Yes, remove' }).click();
      await users.getByRole('row', { name: /tess@example\.com/ }).waitFor({ state: 'detached' });
      assert.equal((await h.srv.api('GET', `/api/v1/users/${target.id}`)).status, 404);
      assert.ok(admin.id);
      assert.deepEqual(h.pageErrors, [], 'no uncaught errors in the pages');
      await signOut(page);
      await page.close();
    });
  });
}
