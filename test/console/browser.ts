/**
 * Browser end-to-end support for the web console (issue 19): a real Orrery (test/support/server.ts)
 * and Debian's Chromium driven by playwright-core. Builds nothing: the console is built by the
 * install step (`npm install` / `npm run build`); without console/dist the tests fail saying so.
 *
 * Every request to another origin is blocked and recorded; `close()` fails if there was any.
 * One browser per test file: `startConsole()` in `before`, `close()` in `after`, pages reused.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestServer, TEST_DIALECTS, type TestDialect, type TestServer } from '../support/server.ts';
import type { Config } from '../../src/config.ts';
import { CONSOLE_DIST } from '../../src/console/routes.ts';

const CHROMIUM = process.env.ORRERY_CHROMIUM ?? '/usr/bin/chromium';
/** The flags of the machine notes: without the background-networking ones Chromium dials out. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const DESKTOP = { width: 1280, height: 800 } as const;
const PHONE = { width: 390, height: 844 } as const;
/**
 * Where screenshots go: a temporary folder, so that `npm test` leaves the checkout as it was;
 * `ORRERY_SCREENSHOTS=docs/screenshots` refreshes the committed PNGs the README shows.
 */
const SCREENSHOTS = process.env.ORRERY_SCREENSHOTS
  ? resolve(process.env.ORRERY_SCREENSHOTS)
  : join(tmpdir(), 'orrery-screenshots');
/**
 * Whether this run includes PostgreSQL (`npm test` does; ORRERY_TEST_DIALECTS=sqlite does not).
 * When it does, a missing cluster fails the PostgreSQL tests (createPgDatabase) instead of skipping.
 */
export const WITH_POSTGRES = TEST_DIALECTS.includes('postgres');

function assertConsoleBuilt(): void {
  if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
    throw new Error(
      `the console is not built (${CONSOLE_DIST} is missing): run \`npm run build\` (npm install / npm ci build it too)`,
    );
  }
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium (.ci/run installs it when missing)`,
    );
  }
}

export interface ConsoleOptions {
  /** Default 'sqlite': browser tests run once, on SQLite; one smoke test uses 'postgres'. */
  dialect?: TestDialect;
  config?: Partial<Config>;
  /** Reuse a running browser (e.g. the PostgreSQL smoke inside a SQLite file). */
  browser?: Browser;
  /** Other origins the pages may reach (an OIDC provider on loopback); every other one is still refused. */
  allowOrigins?: string[];
}

export interface ConsoleHarness {
  srv: TestServer;
  browser: Browser;
  context: BrowserContext;
  /** Requests to other origins that were blocked (any fails `close()`). */
  blocked: string[];
  /** Uncaught errors in any page of this context. */
  pageErrors: string[];
  /** A new tab (1280×800) in this context: its own sessionStorage, so it starts signed out. */
  newPage(): Promise<Page>;
  /** Absolute URL of a console path. */
  url(path?: string): string;
  close(): Promise<void>;
}

async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, chromiumSandbox: false });
}

/** Starts a server and a browser context whose every request to another origin is refused. */
export async function startConsole(opts: ConsoleOptions = {}): Promise<ConsoleHarness> {
  assertConsoleBuilt();
  const srv = await startTestServer(opts.dialect ?? 'sqlite', opts.config);
  const ownBrowser = !opts.browser;
  let browser: Browser;
  try {
    browser = opts.browser ?? (await launchChromium());
  } catch (err) {
    await srv.close();
    throw err;
  }
  const origin = new URL(srv.url).origin;
  const allowed = new Set([origin, ...(opts.allowOrigins ?? []).map((o) => new URL(o).origin)]);
  const context = await browser.newContext({ viewport: DESKTOP, baseURL: srv.url, locale: 'en-US', timezoneId: 'UTC' });
  context.setDefaultTimeout(15_000);
  const blocked: string[] = [];
  const pageErrors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || url.startsWith('blob:') || allowed.has(new URL(url).origin)) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
  context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
  return {
    srv,
    browser,
    context,
    blocked,
    pageErrors,
    newPage: () => context.newPage(),
    url: (path = '/') => new URL(path, srv.url).toString(),
    close: async () => {
      await context.close().catch(() => {});
      if (ownBrowser) await browser.close().catch(() => {});
      await srv.close();
      assert.deepEqual(blocked, [], `the console tried to reach another origin: ${blocked.join(', ')}`);
    },
  };
}

/**
 * On the sign-in page: opens the secondary "Use an API key instead" option (when closed), fills
 * the field labelled "API key" and submits. Does not wait for where the page goes.
 */
export async function submitKey(page: Page, key: string): Promise<void> {
  const toggle = page.getByRole('button', { name: 'Use an API key instead' });
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in with the key', exact: true }).click();
}

/**
 * Signs in with an API key through the sign-in page's key option and waits to leave the page.
 * Default key: the server's bootstrap admin key.
 */
export async function signIn(page: Page, h: ConsoleHarness, key = h.srv.adminKey): Promise<void> {
  await page.goto(h.url('/signin'));
  await submitKey(page, key);
  await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
}

/** Signs in with email and password (the page's first form) and waits to leave the page. */
export async function signInWithPassword(
  page: Page,
  h: ConsoleHarness,
  email: string,
  password: string,
): Promise<void> {
  await page.goto(h.url('/signin'));
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
}

/** Signs out with the shell's button and waits for the sign-in page. */
export async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL((u) => u.pathname.startsWith('/signin'));
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

/**
 * Runs axe-core in the page (evaluated over the DevTools protocol, so the page's CSP stays
 * strict) and fails on serious or critical violations, listing them.
 */
export async function checkA11y(page: Page, what = page.url()): Promise<AxeViolation[]> {
  await page.evaluate(`${axeSource}\n;void 0`);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, failureSummary: n.failureSummary })) })))`,
  )) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `axe found serious violations on ${what}`,
  );
  return violations;
}

/** Saves a PNG of the viewport to SCREENSHOTS/<name>.png (keep them small: 1280×800). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/** Runs `fn` at phone width (390×844), then restores the previous viewport. */
export async function atPhoneWidth<T>(page: Page, fn: () => Promise<T>): Promise<T> {
  const before = page.viewportSize() ?? DESKTOP;
  await page.setViewportSize(PHONE);
  try {
    return await fn();
  } finally {
    await page.setViewportSize(before);
  }
}

/** Fails when the page scrolls sideways (something is cut off or wider than the screen). */
export async function assertNoHorizontalOverflow(page: Page): Promise<void> {
  const { scroll, client, culprits } = (await page.evaluate(`(() => {
    const d = document.documentElement;
    const w = d.clientWidth;
    const culprits = [...document.querySelectorAll('body *')]
      .filter((e) => { const r = e.getBoundingClientRect(); return r.right > w + 1 && getComputedStyle(e).position !== 'fixed'; })
      .filter((e) => !e.closest('.data-table, .code-editor, .code-block'))
      .slice(0, 5).map((e) => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : ''));
    return { scroll: d.scrollWidth, client: w, culprits };
  })()`)) as { scroll: number; client: number; culprits: string[] };
  assert.ok(scroll <= client + 1, `the page is ${scroll}px wide in a ${client}px viewport: ${culprits.join(', ')}`);
}

/** sessionStorage of the page's origin, as an object. */
export async function sessionStorageOf(page: Page): Promise<Record<string, string>> {
  return (await page.evaluate(`Object.fromEntries(Object.entries(sessionStorage))`)) as Record<string, string>;
}
