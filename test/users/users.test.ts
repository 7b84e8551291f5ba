/**
 * People: invitations at the client's paths and shapes, password sign-in, sessions (cookie, CSRF,
 * short-lived tokens checked against the session), suspension and removal taking effect at the
 * next request, personal keys bounded by the user's role, and who did what in the audit trail.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { userSettingsOf } from '../../src/users/settings.ts';
import { Browser, tokenOf } from './browser-session.ts';

const PASSWORD = 'correct horse battery staple';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: users, invitations and sessions`, () => {
    let srv: TestServer;
    let otherProject: string;

    /** Invites `email` with `role` (admin key) and accepts it in a new browser. */
    const join = async (email: string, role: string, project?: string) => {
      const inv = await srv.api('POST', '/api/v1/account/invites', { email, role, ...(project ? { project } : {}) });
      assert.equal(inv.status, 200, JSON.stringify(inv.body));
      const b = new Browser(srv);
      const acc = await b.call('POST', '/auth/invites/accept', {
        token: tokenOf(inv.body.link),
        name: email.split('@')[0],
        password: PASSWORD,
      });
      assert.equal(acc.status, 200, JSON.stringify(acc.body));
      return { browser: b, user: acc.body.user, invite: inv.body };
    };

    before(async () => {
      srv = await startTestServer(dialect, { users: userSettingsOf({ ORRERY_LOGIN_RATE: '1000' }) });
      otherProject = (await srv.api('POST', '/api/v1/projects', { name: 'Other project' })).body.id;
    });
    after(() => srv.close());

    it('an invitation at the client’s path binds email and role, works once, and signs the user in', async () => {
      const client = srv.client();
      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'Ada@Example.com', role: 'developer' });
      assert.equal(inv.status, 200, JSON.stringify(inv.body));
      assert.equal(inv.body.action, 'invited');
      assert.equal(inv.body.mail, 'not_configured');
      assert.ok(inv.body.link.startsWith(`${srv.url}/accept-invite#token=`), inv.body.link);

      // The official client lists it in its shape, without the link's secret.
      const listed = (await client.account.listInvites()) as any[];
      const mine = listed.find((x) => x.id === inv.body.id);
      assert.equal(mine.type, 'user-invite');
      assert.equal(mine.data.email, 'ada@example.com');
      assert.equal(mine.data.role, 'developer');
      assert.equal(mine.data.project.id, srv.orrery.bootstrap.project.id);
      assert.ok(!JSON.stringify(listed).includes(tokenOf(inv.body.link)));

      const b = new Browser(srv);
      const token = tokenOf(inv.body.link);
      const info = await b.call('POST', '/auth/invites/describe', { token });
      assert.deepEqual(
        { email: info.body.email, role: info.body.role },
        { email: 'ada@example.com', role: 'developer' },
      );
      const short = await b.call('POST', '/auth/invites/accept', { token, name: 'Ada', password: 'short' });
      assert.equal(short.status, 400);
      assert.match(short.body.message, /at least 12 characters/);

      const acc = await b.call('POST', '/auth/invites/accept', { token, name: 'Ada Lovelace', password: PASSWORD });
      assert.equal(acc.status, 200, JSON.stringify(acc.body));
      const cookie = acc.headers.get('set-cookie')!;
      assert.match(cookie, /^orrery_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
      assert.deepEqual(acc.body.projects, [
        { id: srv.orrery.bootstrap.project.id, name: srv.orrery.bootstrap.project.name, role: 'developer' },
      ]);

      const again = await new Browser(srv).call('POST', '/auth/invites/accept', {
        token,
        name: 'Eve',
        password: PASSWORD,
      });
      assert.equal(again.status, 401);
      assert.match(again.body.message, /already been used/);
      assert.ok(
        !((await client.account.listInvites()) as any[]).some((x) => x.id === inv.body.id),
        'no longer pending',
      );

      const members = (await client.account.members()) as any[];
      const ada = members.find((m) => m.email === 'ada@example.com');
      assert.equal(ada.name, 'Ada Lovelace');
      assert.equal(ada.status, 'active');
      assert.deepEqual(
        ada.projects.map((x: any) => x.role),
        ['developer'],
      );
      assert.equal(((await client.users.retrieve(ada.id)) as any).email, 'ada@example.com');
    });

    it('an expired invitation and a revoked one are refused, saying why', async () => {
      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'late@example.com', role: 'reader' });
      await srv.orrery.database.db
        .updateTable('user_links' as never)
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() } as never)
        .where('id' as never, '=', inv.body.id as never)
        .execute();
      const late = await new Browser(srv).call('POST', '/auth/invites/accept', {
        token: tokenOf(inv.body.link),
        name: 'Late',
        password: PASSWORD,
      });
      assert.equal(late.status, 401);
      assert.match(late.body.message, /expired at/);

      const rev = await srv.api('POST', '/api/v1/account/invites', { email: 'revoked@example.com', role: 'reader' });
      assert.deepEqual((await srv.client().account.rejectInvite(rev.body.id)) as unknown, { status: 'deleted' });
      const r = await new Browser(srv).call('POST', '/auth/invites/describe', { token: tokenOf(rev.body.link) });
      assert.equal(r.status, 401);
      const forged = await new Browser(srv).call('POST', '/auth/invites/describe', { token: 'x'.repeat(43) });
      assert.equal(forged.status, 401);
      const junk = await new Browser(srv).call('POST', '/auth/invites/describe', { token: '../../etc' });
      assert.equal(junk.status, 400);
    });

    it('bad invitations are 4xx naming the field', async () => {
      const bad = async (body: unknown) => srv.api('POST', '/api/v1/account/invites', body);
      assert.match((await bad({ email: 'nope', role: 'reader' })).body.message, /email/);
      assert.match((await bad({ email: 'a@b.c', role: 'emperor' })).body.message, /role must be one of/);
      assert.equal((await bad({ email: 'a@b.c', role: 'reader', project: 'nowhere' })).status, 404);
      const extra = await bad({ email: 'a@b.c', role: 'reader', picture: 'x' });
      assert.equal(extra.status, 400);
    });

    it('sessions: CSRF on state changes, short-lived tokens, the user recorded as the actor', async () => {
      const { browser: b, user } = await join('grace@example.com', 'developer');
      const session = await b.call('GET', '/auth/session');
      assert.equal(session.status, 200);
      assert.equal(session.body.user.email, 'grace@example.com');

      const noCsrf = await b.call('POST', '/auth/token', {});
      assert.equal(noCsrf.status, 403);
      assert.match(noCsrf.body.message, /x-csrf-token/);
      const wrongCsrf = await b.call('POST', '/auth/token', {}, { 'x-csrf-token': 'x'.repeat(32) });
      assert.equal(wrongCsrf.status, 403);
      const crossSite = await b.call(
        'POST',
        '/auth/token',
        {},
        { 'x-csrf-token': b.csrf!, origin: 'https://evil.example' },
      );
      assert.equal(crossSite.status, 403);
      const noCookie = await new Browser(srv).call('POST', '/auth/token', {}, { 'x-csrf-token': b.csrf! });
      assert.equal(noCookie.status, 401);

      const tok = await b.post('/auth/token', {});
      assert.equal(tok.status, 200, JSON.stringify(tok.body));
      assert.ok(tok.body.expires_in <= 300);
      const jwt = tok.body.token;
      const payload = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
      assert.ok(payload.exp - payload.iat <= 300);

      // The token drives the API as that user: what they make carries their id, the audit trail their email.
      const { interaction } = await seedEcho(srv, { token: jwt, name: 'GraceEcho' });
      assert.equal(interaction.created_by, `user:${user.id}`);
      const run = await srv.api('POST', '/api/v1/execute', { interaction: 'GraceEcho', data: { text: 'hi' } }, jwt);
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.equal(run.body.created_by, `user:${user.id}`);
      const trail: any = await srv.client().auditTrail.list({ resourceId: interaction.id, limit: 10 } as any);
      const created = trail.events.find((e: any) => e.action === 'create');
      assert.equal(created.principal_type, 'user');
      assert.equal(created.principal_id, `user:${user.id}`);
      assert.equal(created.details.actor.email, 'grace@example.com');

      // A tampered token is refused.
      const [h, p, s] = jwt.split('.');
      const forged = Buffer.from(JSON.stringify({ ...payload, role: 'admin' })).toString('base64url');
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, `${h}.${forged}.${s}`)).status, 401);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, `${h}.${p}.${s}`)).status, 200);

      // Sign-out ends the session on the server: the cookie and the tokens stop at once.
      const out = await b.post('/auth/logout');
      assert.equal(out.status, 200);
      assert.match(out.headers.get('set-cookie')!, /Max-Age=0/);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 401);
    });

    it('a user acts only in their projects, with their role; other projects are a 404', async () => {
      const { browser: b, user } = await join('reader@example.com', 'reader');
      const jwt = await b.token();
      const denied = await srv.api('POST', '/api/v1/environments', { name: 'x', provider: 'test' }, jwt);
      assert.equal(denied.status, 403);
      assert.match(denied.body.message, /environment:admin/);
      const other = await b.post('/auth/token', { project: otherProject });
      assert.equal(other.status, 404);
      assert.equal((await srv.api('GET', `/api/v1/projects/${otherProject}`, undefined, jwt)).status, 404);
      // Not an admin: no invitations, no user management.
      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'x@example.com', role: 'reader' }, jwt);
      assert.equal(inv.status, 403);
      assert.equal((await srv.api('PUT', `/api/v1/users/${user.id}`, { status: 'active' }, jwt)).status, 403);

      // Given a role in the other project, the user may switch to it.
      const set = await srv.api('PUT', `/api/v1/users/${user.id}/projects/${otherProject}`, { role: 'executor' });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const there = await b.post('/auth/token', { project: otherProject });
      assert.equal(there.status, 200);
      const projects = await srv.api('GET', '/api/v1/projects', undefined, there.body.token);
      assert.deepEqual(
        projects.body.map((x: any) => x.id),
        [otherProject],
      );
      // A user in only some projects does not see the users of the others.
      const outsider = await join('outsider@example.com', 'reader', otherProject);
      const seen = await srv.api('GET', `/api/v1/users/${outsider.user.id}`, undefined, jwt);
      assert.equal(seen.status, 404);
      const members = await srv.api('GET', '/api/v1/account/members', undefined, jwt);
      assert.ok(!members.body.some((m: any) => m.id === outsider.user.id));
      // Taken out of the project: the token for it stops working.
      await srv.api('DELETE', `/api/v1/users/${user.id}/projects/${otherProject}`);
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, there.body.token)).status, 401);
    });

    it('suspension ends an open session at its next request; so does removal, with the personal keys', async () => {
      const { browser: b, user } = await join('leaver@example.com', 'developer');
      const jwt = await b.token();
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt)).status, 200);

      // Personal keys: bounded by the user's own role.
      const tooMuch = await srv.api('POST', '/api/v1/apikeys', { name: 'mine', role: 'admin' }, jwt);
      assert.equal(tooMuch.status, 403);
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'mine', role: 'executor' }, jwt);
      assert.equal(key.status, 200, JSON.stringify(key.body));
      assert.equal(key.body.created_by, `user:${user.id}`);
      assert.equal((await srv.api('GET', '/api/v1/runs', undefined, key.body.value)).status, 200);

      const susp = await srv.api('PUT', `/api/v1/users/${user.id}`, { status: 'suspended' });
      assert.equal(susp.status, 200, JSON.stringify(susp.body));
      assert.equal(susp.body.status, 'suspended');
      const next = await srv.api('GET', '/api/v1/projects', undefined, jwt);
      assert.equal(next.status, 401);
      assert.equal((await b.call('GET', '/auth/session')).status, 401);
      assert.equal((await srv.api('GET', '/api/v1/runs', undefined, key.body.value)).status, 401, 'their key too');
      const login = await new Browser(srv).call('POST', '/auth/login', {
        email: 'leaver@example.com',
        password: PASSWORD,
      });
      assert.equal(login.status, 401);
      assert.match(login.body.message, /suspended/);

      await srv.api('PUT', `/api/v1/users/${user.id}`, { status: 'active' });
      const back = new Browser(srv);
      assert.equal(
        (await back.call('POST', '/auth/login', { email: 'leaver@example.com', password: PASSWORD })).status,
        200,
      );
      const jwt2 = await back.token();
      const removed = await srv.api('DELETE', `/api/v1/users/${user.id}`);
      assert.deepEqual(removed.body, { id: user.id });
      assert.equal((await srv.api('GET', '/api/v1/projects', undefined, jwt2)).status, 401);
      assert.equal((await srv.api('GET', `/api/v1/apikeys/${key.body.id}`)).status, 404, 'personal key deleted');
      assert.equal((await srv.api('GET', `/api/v1/users/${user.id}`)).status, 404);
    });

    it('password sign-in locks after repeated failures; an admin’s reset link lifts it', async () => {
      const { user } = await join('forgetful@example.com', 'reader');
      const b = new Browser(srv);
      const attempt = (password: string) => b.call('POST', '/auth/login', { email: 'forgetful@example.com', password });
      const unknown = await b.call('POST', '/auth/login', { email: 'nobody@example.com', password: PASSWORD });
      assert.equal(unknown.status, 401);
      for (let i = 0; i < 5; i++) {
        const r = await attempt('wrong password!!');
        assert.equal(r.status, 401);
        assert.equal(r.body.message, unknown.body.message, 'an unknown email reads the same as a wrong password');
      }
      const locked = await attempt(PASSWORD);
      assert.equal(locked.status, 401);
      assert.match(locked.body.message, /locked until/);
      const trail: any = await srv.client().auditTrail.list({ resourceId: user.id, limit: 10 } as any);
      assert.ok(
        trail.events.some((e: any) => e.details.locked_until),
        'the lockout is audited',
      );

      const reset = await srv.api('POST', `/api/v1/users/${user.id}/password-reset`);
      assert.equal(reset.status, 200);
      assert.ok(reset.body.link.startsWith(`${srv.url}/reset-password#token=`));
      const weak = await b.call('POST', '/auth/password-reset', { token: tokenOf(reset.body.link), password: 'x' });
      assert.equal(weak.status, 400);
      const done = await b.call('POST', '/auth/password-reset', {
        token: tokenOf(reset.body.link),
        password: 'a brand new passphrase',
      });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      const twice = await b.call('POST', '/auth/password-reset', {
        token: tokenOf(reset.body.link),
        password: PASSWORD,
      });
      assert.equal(twice.status, 401);
      assert.equal((await attempt(PASSWORD)).status, 401, 'the old password is gone');
      assert.equal((await attempt('a brand new passphrase')).status, 200);
    });

    it('bad sign-in input is a 4xx, never a 500', async () => {
      const b = new Browser(srv);
      assert.equal((await b.call('POST', '/auth/login', { email: 'a@b.c' })).status, 400);
      assert.equal((await b.call('POST', '/auth/login', { email: 'a@b.c', password: 'x'.repeat(5000) })).status, 400);
      assert.equal((await b.call('POST', '/auth/login', { email: 'a@b.c', password: 'p', admin: true })).status, 400);
      const form = await fetch(`${srv.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=a@b.c&password=p',
      });
      assert.equal(form.status, 415, 'a cross-site form cannot post a sign-in');
      assert.equal((await b.call('GET', '/auth/session')).status, 401);
      assert.equal((await b.call('POST', '/auth/logout')).status, 401);
    });
  });

  describe(`${dialect}: sign-in rate limit and admin emails`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, {
        users: userSettingsOf({ ORRERY_LOGIN_RATE: '3', ORRERY_ADMIN_EMAILS: 'Boss@Example.com, ops@example.com' }),
      });
    });
    after(() => srv.close());

    it('ORRERY_ADMIN_EMAILS users are account admins, set up through a reset link from the admin key', async () => {
      const members = (await srv.client().account.members()) as any[];
      const boss = members.find((m) => m.email === 'boss@example.com');
      assert.ok(boss && boss.account_admin && !boss.has_password, JSON.stringify(members));
      assert.ok(members.some((m) => m.email === 'ops@example.com'));
      const reset = await srv.api('POST', `/api/v1/users/${boss.id}/password-reset`);
      const b = new Browser(srv);
      const r = await b.call('POST', '/auth/password-reset', { token: tokenOf(reset.body.link), password: PASSWORD });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        r.body.projects.map((x: any) => x.role),
        ['admin'],
      );
      const jwt = await b.token();
      // An account admin user may invite, and cannot suspend themselves.
      const inv = await srv.api('POST', '/api/v1/account/invites', { email: 'new@example.com', role: 'reader' }, jwt);
      assert.equal(inv.status, 200);
      const self = await srv.api('PUT', `/api/v1/users/${boss.id}`, { status: 'suspended' }, jwt);
      assert.equal(self.status, 409);
    });

    it('sign-in attempts past the rate are 429 with Retry-After', async () => {
      const b = new Browser(srv);
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 5; i++) {
        last = await b.call('POST', '/auth/login', { email: 'ops@example.com', password: 'not the password' });
        statuses.push(last.status);
      }
      assert.ok(statuses.includes(429), statuses.join());
      assert.equal(last!.status, 429);
      assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    });
  });
}
