/**
 * The console's foundation (issue 19): served by the same process with a strict CSP and cache
 * headers, the JSON API untouched; sign-in, navigation, sign-out, accessibility, phone width, and
 * a PostgreSQL smoke. One browser for the file; runs once, on SQLite (plus the PostgreSQL smoke
 * when the run includes PostgreSQL).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import type { Page } from 'playwright-core';
import { consoleRoutes } from '../../src/console/routes.ts';
import {
  assertNoHorizontalOverflow,
  atPhoneWidth,
  checkA11y,
  screenshot,
  sessionStorageOf,
  signIn,
  signOut,
  startConsole,
  submitKey,
  WITH_POSTGRES,
  type ConsoleHarness,
} from './browser.ts';

const NAV = ['Runs', 'Interactions', 'Environments', 'Objects', 'Keys'];

describe('console without a build', () => {
  it('GET / says to run npm run build (never a 500); the API is untouched', async () => {
    const app = Fastify();
    await app.register(consoleRoutes, { dist: join(tmpdir(), 'orrery-no-console-build') });
    const res = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
    assert.equal(res.statusCode, 503);
    assert.match(res.body, /npm run build/);
    assert.ok(res.headers['content-security-policy']);
    const route = await app.inject({ method: 'GET', url: '/runs', headers: { accept: 'text/html' } });
    assert.match(route.body, /npm run build/);
    await app.close();
  });
});

describe('console shell (sqlite)', () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.newPage();
  });
  after(async () => {
    await h?.close();
  });

  it('GET / serves the console: HTML, strict CSP, no cache, nothing from another origin', async () => {
    const res = await fetch(h.url('/'), { headers: { accept: 'text/html' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /https?:|\*/, 'no other origin is allowed');
    const html = await res.text();
    assert.doesNotMatch(html, /https?:\/\//, 'index.html names no other origin');
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), `assets: ${assets}`);
    // Every file of the build: no stylesheet loads from elsewhere, no script imports from elsewhere.
    const { readdirSync } = await import('node:fs');
    const { CONSOLE_DIST } = await import('../../src/console/routes.ts');
    for (const name of readdirSync(`${CONSOLE_DIST}/assets`)) {
      const r = await fetch(h.url(`/assets/${name}`));
      assert.equal(r.status, 200, name);
      const text = await r.text();
      if (name.endsWith('.css'))
        assert.doesNotMatch(text, /url\(\s*["']?(https?:)?\/\/|@import/, `${name} loads nothing from elsewhere`);
      if (name.endsWith('.js'))
        assert.doesNotMatch(
          text,
          /(?:import\s*\(\s*|from\s*|importScripts\s*\(\s*)["'`](https?:)?\/\//,
          `${name} imports nothing from elsewhere`,
        );
    }
  });

  it('hashed assets are immutable for a year; a missing asset is a 404, not index.html', async () => {
    const html = await (await fetch(h.url('/'))).text();
    const js = html.match(/src="(\/assets\/[^"]+\.js)"/)![1];
    const res = await fetch(h.url(js));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(res.headers.get('content-type') ?? '', /javascript/);
    const missing = await fetch(h.url('/assets/nope-12345678.js'), { headers: { accept: 'text/html' } });
    assert.equal(missing.status, 404);
  });

  it('client routes answer index.html; the API and server paths keep their JSON answers', async () => {
    for (const path of ['/runs', '/runs/some-run-id?q=status:failed', '/objects/abc', '/no/such/screen']) {
      const res = await fetch(h.url(path), { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      assert.equal(res.status, 200, path);
      assert.match(await res.text(), /<div id="root">/, path);
      assert.ok(res.headers.get('content-security-policy'), path);
    }
    const nope = await fetch(h.url('/api/v1/nope'), { headers: { accept: 'text/html' } });
    assert.equal(nope.status, 404);
    assert.deepEqual(await nope.json(), { error: 'not_found', status: 404, message: 'no route for GET /api/v1/nope' });
    const json = await fetch(h.url('/runs'), { headers: { accept: 'application/json' } });
    assert.equal(json.status, 404, 'a JSON request for a client path is the JSON 404');
    assert.equal(((await json.json()) as { error: string }).error, 'not_found');
    const health = await fetch(h.url('/health'), { headers: { accept: 'text/html' } });
    assert.equal(((await health.json()) as { status: string }).status, 'ok');
    const openapi = await h.srv.api('GET', '/api/v1/openapi.json');
    const paths = Object.keys(openapi.body.paths);
    assert.ok(
      !paths.some((p) => p === '/' || p.startsWith('/assets') || p === '/*'),
      'console routes are not in the OpenAPI document',
    );
  });

  it('a bad key is refused with a message; the sign-in page passes axe', async () => {
    await page.goto(h.url('/runs'));
    await page.waitForURL((u) => u.pathname === '/signin');
    await page.getByRole('button', { name: 'Use an API key instead' }).click();
    await page.getByLabel('API key').waitFor();
    await checkA11y(page, 'sign-in');
    await screenshot(page, 'console-signin');
    await submitKey(page, 'sk-not-a-real-key');
    await assert.doesNotReject(
      page
        .getByRole('alert')
        .filter({ hasText: /not accepted/i })
        .waitFor(),
    );
    assert.match(page.url(), /\/signin/);
    assert.deepEqual(
      Object.keys(await sessionStorageOf(page)).filter((k) => k.startsWith('orrery.')),
      [],
      'nothing is kept after a refused key',
    );
  });

  it('after sign-in, a redirect to another origin is ignored (the runs page instead); a path of the console is kept', async () => {
    for (const target of ['https://evil.example/', '//evil.example/', '/\\evil.example/']) {
      await page.goto(h.url(`/signin?redirect=${encodeURIComponent(target)}`));
      await submitKey(page, h.srv.adminKey);
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      const at = new URL(page.url());
      assert.equal(at.origin, new URL(h.url()).origin, target);
      assert.equal(at.pathname, '/runs', target);
    }
    await page.goto(h.url(`/signin?redirect=${encodeURIComponent('/keys')}`));
    await submitKey(page, h.srv.adminKey);
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    await signOut(page);
  });

  it('a good key lands on the runs page, the key only in sessionStorage; the shell passes axe', async () => {
    await signIn(page, h);
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/runs');
    const stored = await sessionStorageOf(page);
    assert.equal(stored['orrery.apiKey'], h.srv.adminKey);
    assert.ok(JSON.parse(stored['orrery.token']).token.split('.').length === 3, 'a JWT is kept beside it');
    const local = (await page.evaluate('JSON.stringify(localStorage)')) as string;
    assert.ok(!local.includes(h.srv.adminKey), 'the key is not in localStorage');
    await checkA11y(page, 'runs (shell)');
    await screenshot(page, 'console-shell');
  });

  it('the navigation links, by accessible name, open their screens', async () => {
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const name of NAV) {
      await nav.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1, name }).waitFor();
      assert.equal(new URL(page.url()).pathname, `/${name.toLowerCase()}`);
      assert.equal(await nav.getByRole('link', { name, exact: true }).getAttribute('aria-current'), 'page');
    }
    // A reload of a client route stays signed in and on the route.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  });

  it('the shared components work: official client, virtualised table, code editor, capped text', async () => {
    await h.srv.api('POST', '/api/v1/environments', { name: 'Gallery env', provider: 'test', default_model: 'echo' });
    // An expired JWT is replaced from the key in sessionStorage before the first call.
    await page.evaluate(
      `sessionStorage.setItem('orrery.token', JSON.stringify({ token: 'expired.jwt.x', expiresAt: 0 }))`,
    );
    await page.goto(h.url('/_components'));
    await page.getByRole('heading', { level: 1, name: 'Components' }).waitFor();
    await page.getByText('1 environment(s)').waitFor();
    assert.notEqual(
      JSON.parse((await sessionStorageOf(page))['orrery.token']).token,
      'expired.jwt.x',
      'the JWT was refreshed',
    );
    const table = page.getByRole('table', { name: 'Sample rows' });
    const rendered = await table.getByRole('row').count();
    assert.ok(rendered > 5 && rendered < 100, `10,000 rows, ${rendered} in the DOM`);
    await table.getByRole('row', { name: /Row 3 completed/ }).click();
    await page.getByText('Picked Row 3').waitFor();
    await page
      .getByRole('region', { name: 'Sample rows (scrollable)' })
      .evaluate((e: { scrollTop: number; scrollHeight: number }) => {
        e.scrollTop = e.scrollHeight;
      });
    await table.getByRole('row', { name: /Row 10000 / }).waitFor();
    const editor = page.getByRole('textbox', { name: 'Template' });
    await editor.click();
    await page.keyboard.press('End');
    await page.keyboard.type(' {{more}}');
    await page.getByText(/^57 characters$/).waitFor();
    assert.ok((await page.locator('.code-editor .cm-line span').count()) > 0, 'handlebars tags are highlighted');
    assert.equal((await page.locator('.capped pre').textContent())!.length, 1000);
    await page.getByRole('button', { name: 'Show all' }).click();
    assert.equal((await page.locator('.capped pre').textContent())!.length, 50_000);
    assert.ok(await page.getByRole('button', { name: 'Download' }).isVisible());
    await checkA11y(page, 'components');
  });

  it('at phone width nothing overflows sideways', async () => {
    await atPhoneWidth(page, async () => {
      await page.goto(h.url('/runs'));
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      await assertNoHorizontalOverflow(page);
      for (const name of NAV)
        assert.ok(await page.getByRole('link', { name, exact: true }).isVisible(), `${name} is visible`);
      assert.ok(await page.getByRole('button', { name: 'Sign out' }).isVisible());
      await page.goto(h.url('/signin'));
      await assertNoHorizontalOverflow(page);
    });
  });

  it('sign out returns to sign-in and clears sessionStorage; screens then need signing in', async () => {
    await page.goto(h.url('/runs'));
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await signOut(page);
    await page.getByRole('button', { name: 'Use an API key instead' }).waitFor();
    const left = await sessionStorageOf(page);
    assert.deepEqual(
      Object.keys(left).filter((k) => k.startsWith('orrery.')),
      [],
      'the key and the token are dropped',
    );
    assert.ok(!JSON.stringify(left).includes(h.srv.adminKey));
    await page.goto(h.url('/objects'));
    await page.waitForURL((u) => u.pathname === '/signin');
    assert.deepEqual(h.pageErrors, [], 'no uncaught errors in the pages');
  });

  it(
    'on PostgreSQL: sign in and see the runs page (smoke)',
    { skip: !WITH_POSTGRES && 'the run does not include PostgreSQL' },
    async () => {
      const pg = await startConsole({ dialect: 'postgres', browser: h.browser });
      try {
        const p = await pg.newPage();
        await signIn(p, pg);
        await p.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
        assert.equal(new URL(p.url()).pathname, '/runs');
      } finally {
        await pg.close();
      }
    },
  );
});
