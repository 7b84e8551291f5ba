/**
 * The console's runs screens (issue 19, points 2 and 3) in a real Chromium: the explorer over
 * 1,000 seeded runs (newest first, virtualised, paged as it scrolls, Lucene query with the error
 * position, facet chips in the URL, column picker kept across visits, live toggle, histogram), the
 * run detail (messages, result, tokens, tags, error code, a live SSE stream), j/k navigation,
 * accessibility, phone width, screenshots, and the first contentful paint (recorded).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import type { Page } from 'playwright-core';
import {
  assertNoHorizontalOverflow,
  atPhoneWidth,
  checkA11y,
  screenshot,
  signIn,
  startConsole,
  type ConsoleHarness,
} from './browser.ts';
import { seedEcho } from '../support/server.ts';
import { newId, nowIso } from '../../src/db/ids.ts';
import { RUN_ROW_COLUMNS, type RunRow } from '../../src/runs/model.ts';
import { insertRuns, type NewRun } from '../../src/runs/search-index.ts';
import { decodeRun, encodeRun } from '../../src/runs/store.ts';

const RUNS = 1000;
const FAILED_EVERY = 10; // every 10th run fails: 100 failed runs
const TAGS = ['alpha', 'beta', 'gamma', 'delta'];
/** The newest runs, made through HTTP; the older ones are copies written through the store. */
const VIA_HTTP = 24;

describe('console runs screens (sqlite)', () => {
  let h: ConsoleHarness;
  let page: Page;
  let echo: Awaited<ReturnType<typeof seedEcho>>;
  let slow: Awaited<ReturnType<typeof seedEcho>>;
  const counts = { failed: 0, alpha: 0 };

  before(async () => {
    h = await startConsole();
    echo = await seedEcho(h.srv);
    slow = await seedEcho(h.srv, { name: 'Slow echo', config: { chunk_delay_ms: 200 } });
    const started = Date.now();
    const planOf = (i: number) => {
      const fail = i % FAILED_EVERY === 3;
      const tags = [TAGS[i % TAGS.length], ...(i % 7 === 0 ? ['nightly'] : [])];
      if (fail) counts.failed++;
      if (tags.includes('alpha')) counts.alpha++;
      return { fail, tags, text: `seeded run number ${i}` };
    };
    const viaHttp = async (i: number) => {
      const { fail, tags, text } = planOf(i);
      const r = await h.srv.api('POST', '/api/v1/runs', {
        interaction: echo.interaction.id,
        data: { text },
        tags,
        ...(fail ? { config: { model: 'error' } } : {}),
      });
      assert.equal(r.status, fail ? 502 : 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const inParallel = async (from: number, to: number) => {
      let next = from;
      const worker = async () => {
        for (let i = next++; i < to; i = next++) await viaHttp(i);
      };
      await Promise.all(Array.from({ length: 12 }, worker));
    };
    // The oldest runs, 4 through RUNS - VIA_HTTP, are copies of a completed and a failed run made
    // through the run path, written through the runs' store (the path the service takes, so the
    // search index and facets hold them alike), their text and tags changed: the console reads
    // what the store holds, and 1,000 runs through HTTP were half a minute of the file. The newest
    // VIA_HTTP runs, which the detail tests open, go through the run path too.
    const seedRuns = async () => {
      const { db, dialect } = h.srv.orrery.database;
      const completed = await viaHttp(0);
      for (const i of [1, 2]) await viaHttp(i);
      const failed = await viaHttp(3);
      const rowOf = async (id: string) => {
        // Through the server first: it answers a run once the run is stored (run-intents.ts).
        assert.equal((await h.srv.api('GET', `/api/v1/runs/${id}`)).status, 200);
        const row = await db.selectFrom('runs').select(RUN_ROW_COLUMNS).where('id', '=', id).executeTakeFirstOrThrow();
        return decodeRun(dialect, row as RunRow);
      };
      const templates = {
        completed: { row: await rowOf(completed), text: 'seeded run number 0' },
        failed: { row: await rowOf(failed), text: 'seeded run number 3' },
      };
      const copies: NewRun[] = [];
      for (let i = 4; i < RUNS - VIA_HTTP; i++) {
        const { fail, tags, text } = planOf(i);
        const t = fail ? templates.failed : templates.completed;
        const at = nowIso();
        const doc = JSON.parse(JSON.stringify(t.row.doc).replaceAll(t.text, text)) as unknown;
        copies.push({ row: { ...t.row, id: newId(), tags, created_at: at, updated_at: at, doc }, tags });
      }
      await insertRuns(db, dialect, copies, (row) => encodeRun(dialect, row));
      await inParallel(RUNS - VIA_HTTP, RUNS);
    };
    // Seed (the server's work) while the browser opens a tab and signs in.
    const seeding = seedRuns().then(() => console.log(`# seeded ${RUNS} runs in ${Date.now() - started} ms`));
    page = await h.newPage();
    page.on('response', (res) => {
      if (
        res.url().includes('/api/') &&
        res.status() >= 400 &&
        !res.url().includes('/runs/search') &&
        !res.url().includes('/runs/facets')
      )
        console.log(`# ${res.request().method()} ${res.url()} → ${res.status()}`);
    });
    await signIn(page, h);
    await seeding;
    await page.reload();
  });
  after(async () => {
    await h?.close();
    assert.deepEqual(h?.pageErrors ?? [], [], 'no uncaught errors in the page');
  });

  const table = () => page.getByRole('table', { name: 'Runs' });
  const summary = () => page.locator('.runs-summary');
  const dataRows = () => table().locator('tbody tr[data-row-id]');
  const newestIds = async (n: number, query: Record<string, string> = {}) => {
    const qs = new URLSearchParams({ limit: String(n), ...query });
    const r = await h.srv.api('GET', `/api/v1/runs?${qs.toString()}`);
    return (r.body as Array<{ id: string }>).map((x) => x.id);
  };

  it('lists the runs newest first, virtualised, with facets and a histogram', async () => {
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await page.waitForURL(/\/runs/);
    await summary().filter({ hasText: '1,000 runs' }).waitFor();
    const ids = await newestIds(3);
    const shown = await dataRows().evaluateAll((trs) => trs.slice(0, 3).map((tr) => tr.getAttribute('data-row-id')));
    assert.deepEqual(shown, ids, 'newest first, as the API orders them');
    const inDom = await table().getByRole('row').count();
    assert.ok(inDom > 5 && inDom < 80, `only a window of rows is in the DOM (${inDom})`);
    assert.equal(await table().getAttribute('aria-rowcount'), '201', 'a first page of 200 runs (+ the header row)');
    // Failed runs stand out.
    assert.ok((await table().locator('tr.run-failed').count()) > 0);
    await page.getByRole('button', { name: `status: failed ${counts.failed} runs` }).waitFor();
    await page.getByRole('button', { name: /^tags: alpha \d/ }).waitFor();
    await page.getByRole('img', { name: /Histogram of 1,000 runs/ }).waitFor();
    assert.ok(await page.locator('.runs-histogram canvas').count(), 'uPlot drew the histogram');
    await checkA11y(page, 'runs explorer');
    await screenshot(page, 'runs');
  });

  it('loads more runs when scrolled near the end', async () => {
    await summary().filter({ hasText: '200 loaded' }).waitFor();
    const toEnd = (el: any) => {
      el.scrollTop = el.scrollHeight;
    };
    await page.locator('.data-table').evaluate(toEnd);
    await summary().filter({ hasText: '400 loaded' }).waitFor();
    await page.locator('.data-table').evaluate(toEnd);
    await summary().filter({ hasText: '600 loaded' }).waitFor();
    const inDom = await table().getByRole('row').count();
    assert.ok(inDom < 80, `still only a window of rows in the DOM (${inDom})`);
    // No run twice across the keyset pages.
    const last = await dataRows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-row-id')));
    assert.equal(new Set(last).size, last.length);
  });

  it('narrows with a Lucene query, and shows where a bad query is wrong', async () => {
    const box = page.getByRole('searchbox', { name: 'Search runs' });
    await box.fill('status:failed');
    await box.press('Enter');
    await summary()
      .filter({ hasText: `${counts.failed} runs` })
      .waitFor();
    assert.match(page.url(), /q=status%3Afailed|q=status:failed/);
    assert.equal(await table().locator('tr.run-failed').count(), await dataRows().count(), 'every row is a failed run');

    await box.fill('status:(failed OR');
    await box.press('Enter');
    const alert = page.getByRole('alert').filter({ hasText: 'Invalid query' });
    await alert.waitFor();
    const text = await alert.innerText();
    assert.match(text, /position \d+/);
    assert.equal(await alert.locator('mark.query-error-mark').count(), 1, 'the position is marked in the query');
    assert.equal(await box.getAttribute('aria-invalid'), 'true');
    await screenshot(page, 'runs-query-error');
    await page.getByRole('button', { name: 'Clear' }).click();
    await summary().filter({ hasText: '1,000 runs' }).waitFor();
    assert.equal(await alert.count(), 0);
  });

  it('narrows with a facet chip kept in the URL; a reload restores the view', async () => {
    await page.getByRole('button', { name: /^tags: alpha \d/ }).click();
    await summary()
      .filter({ hasText: `${counts.alpha} runs` })
      .waitFor();
    assert.match(decodeURIComponent(page.url()), /facets=.*alpha/);
    const box = page.getByRole('searchbox', { name: 'Search runs' });
    await box.fill('status:completed');
    await box.press('Enter');
    const both = (
      await h.srv.api('POST', '/api/v1/runs/search', {
        query: 'status:completed',
        filters: { tags: ['alpha'] },
        facets: { s: { path: 'status' } },
        onlyMeta: true,
      })
    ).body.count.total;
    await summary()
      .filter({ hasText: `${both.toLocaleString('en-US')} runs` })
      .waitFor();
    await page.reload();
    await summary()
      .filter({ hasText: `${both.toLocaleString('en-US')} runs` })
      .waitFor();
    assert.equal(await box.inputValue(), 'status:completed');
    await page.getByRole('button', { name: /^Remove filter tags: alpha/i }).waitFor();
    assert.equal(await page.getByRole('button', { name: /^tags: alpha \d/ }).getAttribute('aria-pressed'), 'true');
    await page.getByRole('button', { name: /^Remove filter tags: alpha/i }).click();
    await page.getByRole('button', { name: 'Clear' }).click();
    await summary().filter({ hasText: '1,000 runs' }).waitFor();
    assert.doesNotMatch(decodeURIComponent(page.url()), /alpha/);
  });

  it('keeps the chosen columns across visits', async () => {
    await page.getByText('Columns', { exact: true }).click();
    await page.getByRole('checkbox', { name: 'Run id' }).check();
    await page.getByRole('checkbox', { name: 'Tags' }).uncheck();
    await table().getByRole('columnheader', { name: 'Run id' }).waitFor();
    assert.equal(await table().getByRole('columnheader', { name: 'Tags' }).count(), 0);
    await page.goto(h.url('/runs'));
    await summary().filter({ hasText: '1,000 runs' }).waitFor();
    await table().getByRole('columnheader', { name: 'Run id' }).waitFor();
    assert.equal(await table().getByRole('columnheader', { name: 'Tags' }).count(), 0);
    // Back to the default for the rest.
    await page.getByText('Columns', { exact: true }).click();
    await page.getByRole('button', { name: 'Reset to default' }).click();
    await table().getByRole('columnheader', { name: 'Tags' }).waitFor();
    await page.getByText('Columns', { exact: true }).click();
  });

  it('shows a run created after "Live" was turned on', async () => {
    await page.getByRole('checkbox', { name: 'Live' }).check();
    await page.waitForURL(/live=true/);
    const r = await h.srv.api('POST', '/api/v1/runs', {
      interaction: echo.interaction.id,
      data: { text: 'a live one' },
      tags: ['live'],
    });
    assert.equal(r.status, 200);
    await table().locator(`tr[data-row-id="${r.body.id}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await dataRows().first().getAttribute('data-row-id'), r.body.id, 'on top');
    await summary().filter({ hasText: '1,001 runs' }).waitFor();
    await page.getByRole('checkbox', { name: 'Live' }).uncheck();
  });

  it('phone width: nothing overflows sideways', async () => {
    await atPhoneWidth(page, async () => {
      await table().waitFor();
      await assertNoHorizontalOverflow(page);
      await screenshot(page, 'runs-phone');
    });
  });

  it('opens a run: messages, result, tokens, tags; j/k move through the list', async () => {
    const ids = await dataRows().evaluateAll((trs) => trs.slice(0, 3).map((tr) => tr.getAttribute('data-row-id')!));
    // j/k on the explorer move a cursor; Enter opens the run under it.
    await page.getByRole('heading', { level: 1, name: 'Runs' }).click();
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await summary().filter({ hasText: 'run 2 selected' }).waitFor();
    assert.equal(await table().locator(`tr[data-row-id="${ids[1]}"]`).getAttribute('aria-selected'), 'true');
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/runs/${ids[1]}`);
    await page.getByRole('heading', { level: 1, name: `Run ${ids[1]}` }).waitFor();
    const run = (await h.srv.api('GET', `/api/v1/runs/${ids[1]}`)).body;
    await page.getByRole('heading', { name: 'Prompt' }).waitFor();
    const prompt = page.locator('.messages');
    await prompt.getByText('user', { exact: true }).waitFor();
    await prompt.getByText(run.prompt.at(-1).content).waitFor();
    await page.getByRole('heading', { name: 'Result' }).waitFor();
    if (run.status === 'completed') await page.getByLabel('Result text').getByText(run.result[0].value).waitFor();
    // A run that failed before its provider answered has no token use: the page shows a dash.
    const total = page
      .getByLabel('Token use')
      .locator('.kv-row')
      .filter({ has: page.locator('dt', { hasText: 'Total' }) })
      .locator('dd');
    await total.filter({ hasText: run.token_use?.total !== undefined ? String(run.token_use.total) : '—' }).waitFor();
    for (const t of run.tags) await page.getByRole('link', { name: `Runs tagged ${t}` }).waitFor();
    await page.getByText('Run 2 of').waitFor();
    await page.keyboard.press('j');
    await page.waitForURL(`**/runs/${ids[2]}`);
    await page.getByRole('heading', { level: 1, name: `Run ${ids[2]}` }).waitFor();
    await page.keyboard.press('k');
    await page.keyboard.press('k');
    await page.waitForURL(`**/runs/${ids[0]}`);
    await page.getByText('Run 1 of').waitFor();
    await page.getByRole('link', { name: '← All runs' }).click();
    await table().locator(`tr[data-row-id="${ids[0]}"]`).waitFor();
    await page.getByRole('link', { name: new RegExp(`^Run ${ids[1]} at`) }).click();
    await page.getByText('Run 2 of').waitFor();
  });

  it("shows a failed run's error with its code", async () => {
    const [failed] = await newestIds(1, { status: 'failed' });
    await page.goto(h.url(`/runs/${failed}`));
    const error = page.locator('section.run-error');
    await error.getByText('provider_error').waitFor();
    await error.getByText(/error model/).waitFor();
    await page.locator('.run-status.status-failed').first().waitFor();
    await checkA11y(page, 'run detail (failed)');
  });

  it('caps huge fields so the tab never freezes', async () => {
    const text = 'lorem ipsum '.repeat(20_000); // 240,000 characters, in the prompt and the result
    const r = await h.srv.api('POST', '/api/v1/runs', { interaction: echo.interaction.id, data: { text } });
    assert.equal(r.status, 200);
    await page.goto(h.url(`/runs/${r.body.id}`));
    const result = page.locator('section.card', { has: page.getByRole('heading', { name: 'Result' }) });
    await result.getByText(/Showing 20,000 of 240,00\d characters/).waitFor();
    assert.ok((await page.getByLabel('Result text').innerText()).length <= 20_000);
    await result.getByRole('button', { name: 'Download' }).waitFor();
    await page
      .locator('.messages')
      .getByText(/Showing 8,000 of/)
      .waitFor();
  });

  it("lists a run's attempts and child runs, as links", async () => {
    const retried = await h.srv.api('POST', '/api/v1/runs', {
      interaction: echo.interaction.id,
      data: { text: 'retried once, unique' },
      config: { model: 'flaky:1' },
    });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.body.attempts?.length, 2, JSON.stringify(retried.body.attempts));
    const child = await h.srv.api('POST', '/api/v1/runs', {
      interaction: echo.interaction.id,
      data: { text: 'a child' },
      parent: retried.body.id,
    });
    assert.equal(child.status, 200, JSON.stringify(child.body));
    await page.goto(h.url(`/runs/${retried.body.id}`));
    const attempts = page.locator('section.card', { has: page.getByRole('heading', { name: 'Attempts' }) });
    await attempts.getByText('provider_error').waitFor();
    assert.equal(await attempts.locator('li').count(), 2);
    await page.getByRole('heading', { name: 'Child runs (1)' }).waitFor();
    await page.getByRole('link', { name: child.body.id }).click();
    await page.getByRole('heading', { level: 1, name: `Run ${child.body.id}` }).waitFor();
    await page.getByRole('link', { name: retried.body.id }).waitFor(); // its parent
  });

  it('streams a running run live, then shows its final status', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `word${i}`).join(' ');
    const r = await h.srv.api('POST', '/api/v1/runs', {
      interaction: slow.interaction.id,
      data: { text: words },
      stream: true,
      tags: ['streamed'],
    });
    assert.equal(r.status, 200);
    assert.notEqual(r.body.status, 'completed');
    await page.goto(h.url(`/runs/${r.body.id}`));
    await page.getByText(/Streaming: \d+ chunks? so far/).waitFor();
    const stream = page.getByLabel('Streamed result');
    await stream.getByText(/word\d/).waitFor();
    const partial = await stream.innerText();
    assert.ok(!partial.includes('word11'), `chunks arrive one by one (saw: ${partial})`);
    await page.locator('.run-summary .run-status.status-completed').waitFor({ timeout: 15_000 });
    await page
      .getByLabel('Result text')
      .getByText(/word11/)
      .waitFor();
    await checkA11y(page, 'run detail');
    await atPhoneWidth(page, () => assertNoHorizontalOverflow(page));
    await screenshot(page, 'run-detail');
  });

  it('first contentful paint of the runs page with 1,000 runs (recorded)', async () => {
    const total = (
      await h.srv.api('POST', '/api/v1/runs/search', { query: '', facets: { s: { path: 'status' } }, onlyMeta: true })
    ).body.count.total as number;
    const all = `${total.toLocaleString('en-US')} runs`;
    await page.goto(h.url('/runs'));
    await summary().filter({ hasText: all }).waitFor();
    const fcps: number[] = [];
    for (let i = 0; i < 2; i++) {
      await page.reload();
      await summary().filter({ hasText: all }).waitFor();
      await table().getByRole('row').nth(5).waitFor();
      const fcp = (await page.evaluate(
        `performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint')?.startTime ?? -1`,
      )) as number;
      const rows = (await page.evaluate(
        `(() => { const m = performance.getEntriesByType('mark'); const n = performance.getEntriesByType('navigation')[0]; return n ? n.domContentLoadedEventEnd : -1; })()`,
      )) as number;
      fcps.push(Math.round(fcp));
      console.log(
        `# runs page: first contentful paint ${Math.round(fcp)} ms, DOMContentLoaded ${Math.round(rows)} ms (${cpus().length} cores)`,
      );
    }
    const best = Math.min(...fcps);
    assert.ok(best > 0, 'a first contentful paint was recorded');
    // Recorded, not asserted under 1 s on a loaded machine: the README's "Measured" section has the figures.
    if (best >= 1000) console.log(`# note: FCP ${best} ms is over 1 s on this (loaded) machine`);
  });
});
