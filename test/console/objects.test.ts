/**
 * The console's objects browser, object detail, and project/keys screens (issue 19, points 6 and
 * 7), in Chromium against a real server (SQLite): upload with progress and processing, folders,
 * search, export, detail (text, renditions, similar objects, download, delete), API keys (the
 * secret once, revoke) and switching project; axe, phone width and screenshots on each screen.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
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
import { processed, upload } from '../objects/helpers.ts';

const NOTES = 'Meeting notes of the orrery team.\nThe telescope arrives on Tuesday; bring the brass polish.\n';

async function seedObject(h: ConsoleHarness, name: string, text: string, location: string): Promise<string> {
  const up = await upload(h.srv, name, text, { type: 'text/plain' });
  const r = await h.srv.api('POST', '/api/v1/objects', {
    name,
    location,
    content: { source: up.id, name, type: 'text/plain', etag: up.etag },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id;
}

/** At phone width: no sideways overflow (and a look, with OBJECTS_PHONE_SHOTS=dir). */
async function phoneCheck(page: Page, name: string): Promise<void> {
  await atPhoneWidth(page, async () => {
    await assertNoHorizontalOverflow(page);
    if (process.env.OBJECTS_PHONE_SHOTS)
      await page.screenshot({ path: `${process.env.OBJECTS_PHONE_SHOTS}/${name}.png`, fullPage: true });
  });
}

const rowNames = async (page: Page): Promise<string[]> =>
  (
    await page.getByRole('table', { name: 'Objects' }).locator('tbody tr:not(.spacer) .obj-name').allTextContents()
  ).sort();

/** Polls a JavaScript expression in the page until it is truthy (waitForFunction evaluates strings, which the CSP forbids). */
async function until(page: Page, expression: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`);
    await page.waitForTimeout(100);
  }
}

/** Waits until the table shows exactly these names. */
async function expectRows(page: Page, names: string[]): Promise<void> {
  const want = [...names].sort();
  const until = Date.now() + 10_000;
  let got: string[] = [];
  while (Date.now() < until) {
    got = await rowNames(page);
    if (JSON.stringify(got) === JSON.stringify(want)) return;
    await page.waitForTimeout(100);
  }
  assert.deepEqual(got, want);
}

describe('console objects and keys (sqlite)', () => {
  let h: ConsoleHarness;
  let page: Page;
  let png: Buffer;
  const ids: Record<string, string> = {};
  let seededReady: Promise<unknown>;

  before(async () => {
    h = await startConsole();
    png = await sharp({ create: { width: 96, height: 64, channels: 3, background: { r: 200, g: 40, b: 40 } } })
      .png()
      .toBuffer();
    // Seeded through the API; their processing runs while the browser signs in and uploads.
    const [summary, q3] = await Promise.all([
      seedObject(h, 'summary.txt', 'Quarterly summary: sales rose.', '/reports'),
      seedObject(h, 'q3.txt', 'The zebra migration report for the third quarter.', '/reports/2026'),
    ]);
    Object.assign(ids, { summary, q3 });
    seededReady = Promise.all([processed(h.srv, summary), processed(h.srv, q3)]);
    seededReady.catch(() => {});
    page = await h.newPage();
    await signIn(page, h);
  });
  after(async () => {
    await h?.close();
  });

  it('uploads two files with progress and shows them processed', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Objects', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Objects' }).waitFor();
    await expectRows(page, ['q3.txt', 'summary.txt']);
    await page.getByLabel('Upload files').setInputFiles([
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(NOTES) },
      { name: 'pixel.png', mimeType: 'image/png', buffer: png },
    ]);
    for (const [name, size] of [
      ['notes.txt', Buffer.byteLength(NOTES)],
      ['pixel.png', png.length],
    ] as const) {
      const bar = page.getByRole('progressbar', { name: `Upload of ${name}` });
      await bar.waitFor();
      assert.equal(await bar.getAttribute('max'), String(size));
      await until(
        page,
        `(() => { const p = document.querySelector('progress[aria-label="Upload of ${name}"]'); return p && p.value === p.max; })()`,
      );
      // The upload list follows the object's status until it is processed.
      await page.locator('.upload-item', { hasText: name }).locator('.obj-status-ready').waitFor({ timeout: 30_000 });
    }
    await expectRows(page, ['notes.txt', 'pixel.png', 'q3.txt', 'summary.txt']);
    // Uploaded at the top level.
    const objs = (await h.srv.api('GET', '/api/v1/objects?location=/&limit=10')).body as Array<{
      id: string;
      name: string;
      status: string;
    }>;
    for (const o of objs) ids[o.name] = o.id;
    assert.deepEqual(objs.map((o) => o.name).sort(), ['notes.txt', 'pixel.png']);
    const row = page.getByRole('table', { name: 'Objects' }).getByRole('row').filter({ hasText: 'pixel.png' });
    await row.getByText('ready').waitFor();
    await row.getByText('image/png').waitFor();
    await checkA11y(page, 'objects');
    await screenshot(page, 'objects');
    await phoneCheck(page, 'objects');
  });

  it('folders from location navigate; the folder is in the URL', async () => {
    const folders = page.getByRole('navigation', { name: 'Folders' });
    await folders.getByRole('link', { name: /^reports/ }).click();
    await page.waitForURL((u) => u.searchParams.get('location') === '/reports');
    await expectRows(page, ['summary.txt']);
    await folders.getByRole('link', { name: /^2026/ }).click();
    await page.waitForURL((u) => u.searchParams.get('location') === '/reports/2026');
    await expectRows(page, ['q3.txt']);
    // The breadcrumb goes back up.
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'reports' }).click();
    await expectRows(page, ['summary.txt']);
    await folders.getByRole('link', { name: /^Top level/ }).click();
    await expectRows(page, ['notes.txt', 'pixel.png']);
    await folders.getByRole('link', { name: 'All objects' }).click();
    await expectRows(page, ['notes.txt', 'pixel.png', 'q3.txt', 'summary.txt']);
  });

  it('search by name and by full text narrow the table', async () => {
    await seededReady;
    const byName = page.getByRole('searchbox', { name: 'Search by name' });
    await byName.fill('PIXEL');
    await byName.press('Enter');
    await expectRows(page, ['pixel.png']);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'PIXEL');
    await byName.fill('');
    await byName.press('Enter');
    await expectRows(page, ['notes.txt', 'pixel.png', 'q3.txt', 'summary.txt']);
    const fullText = page.getByRole('searchbox', { name: 'Full-text search' });
    await fullText.fill('zebra');
    await fullText.press('Enter');
    await expectRows(page, ['q3.txt']);
    await fullText.fill('telescope');
    await fullText.press('Enter');
    await expectRows(page, ['notes.txt']);
    await fullText.fill('');
    await fullText.press('Enter');
    await expectRows(page, ['notes.txt', 'pixel.png', 'q3.txt', 'summary.txt']);
  });

  it('exports the selection as CSV and JSON', async () => {
    const table = page.getByRole('table', { name: 'Objects' });
    await table.getByRole('checkbox', { name: 'Select notes.txt' }).check();
    await table.getByRole('checkbox', { name: 'Select pixel.png' }).check();
    await page.getByText('2 selected').waitFor();
    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export 2 as CSV' }).click(),
    ]);
    assert.match(csv.suggestedFilename(), /\.csv$/);
    const csvText = readFileSync((await csv.path())!, 'utf8');
    assert.match(csvText, /notes\.txt/);
    assert.match(csvText, /pixel\.png/);
    assert.doesNotMatch(csvText, /q3\.txt|summary\.txt/);
    assert.equal(csvText.trim().split(/\r?\n/).length, 3, 'a header and two rows');
    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export 2 as JSON' }).click(),
    ]);
    assert.match(json.suggestedFilename(), /\.json$/);
    const list = JSON.parse(readFileSync((await json.path())!, 'utf8')) as Array<{
      id: string;
      name: string;
      status: string;
    }>;
    assert.ok(Array.isArray(list));
    assert.deepEqual(list.map((o) => o.name).sort(), ['notes.txt', 'pixel.png']);
    assert.deepEqual(list.map((o) => o.id).sort(), [ids['notes.txt'], ids['pixel.png']].sort());
    // Nothing selected: the current folder.
    await page.getByRole('button', { name: 'Clear selection' }).click();
    await page
      .getByRole('navigation', { name: 'Folders' })
      .getByRole('link', { name: /^reports/ })
      .click();
    await expectRows(page, ['summary.txt']);
    const [folderCsv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const folderText = readFileSync((await folderCsv.path())!, 'utf8');
    assert.match(folderText, /summary\.txt/);
    assert.doesNotMatch(folderText, /notes\.txt|pixel\.png|q3\.txt/);
  });

  it('object detail: text, tokens, metadata, renditions, similar objects, download; a processing error', async () => {
    const broken = (async () => {
      const up = await upload(h.srv, 'broken.pdf', '%PDF-1.7\nthis is not a PDF at all\n%%EOF');
      const r = await h.srv.api('POST', '/api/v1/objects', {
        name: 'broken.pdf',
        location: '/broken',
        content: { source: up.id, name: 'broken.pdf', type: 'application/pdf', etag: up.etag },
      });
      return r.body.id as string;
    })();
    await page.goto(h.url(`/objects/${ids['notes.txt']}`));
    await page.getByRole('heading', { level: 1, name: 'notes.txt' }).waitFor();
    await page
      .getByRole('region', { name: 'Extracted text' })
      .getByText(/brass polish/)
      .waitFor();
    assert.match((await page.getByTestId('token-count').textContent()) ?? '', /^\d+/);
    await page.getByRole('heading', { name: 'Metadata' }).waitFor();
    assert.match(
      (await page.getByRole('region', { name: 'Metadata' }).locator('pre').textContent()) ?? '',
      /"size": \d+/,
    );
    await page.getByRole('heading', { name: 'Properties' }).waitFor();
    await page.getByRole('heading', { name: 'Similar objects' }).waitFor();
    const similar = page.getByRole('region', { name: 'Similar objects' });
    await similar.getByRole('link').or(similar.locator('p.muted')).first().waitFor();
    // The download link's bytes are the file's.
    const href = await page.getByRole('link', { name: 'Download' }).getAttribute('href');
    assert.ok(href && new URL(href).origin === new URL(h.srv.url).origin, `a signed URL of this origin: ${href}`);
    const fetched = (await page.evaluate(`fetch(${JSON.stringify(href)}).then((r) => r.text())`)) as string;
    assert.equal(fetched, NOTES);
    await checkA11y(page, 'object detail (text)');

    await page.goto(h.url(`/objects/${ids['pixel.png']}`));
    await page.getByRole('heading', { level: 1, name: 'pixel.png' }).waitFor();
    const img = page.getByRole('region', { name: 'Renditions' }).getByRole('img').first();
    await img.waitFor();
    await until(page, `[...document.querySelectorAll('.rendition img')].some((i) => i.complete && i.naturalWidth > 0)`);
    assert.match((await img.getAttribute('alt')) ?? '', /^Rendition /);
    await page.getByRole('region', { name: 'Similar objects' }).waitFor();
    await checkA11y(page, 'object detail (image)');
    await screenshot(page, 'object-detail');
    await phoneCheck(page, 'object-detail');

    // A file that fails processing: the status and the error with its step and code.
    await page.goto(h.url(`/objects/${await broken}`));
    await page.getByRole('heading', { level: 1, name: 'broken.pdf' }).waitFor();
    const alert = page.getByRole('alert').filter({ hasText: 'Processing failed' });
    await alert.waitFor({ timeout: 30_000 });
    assert.match((await alert.textContent()) ?? '', /corrupt_file/);
    await page.locator('.obj-status-failed').first().waitFor();
  });

  it('delete, after confirming, removes the object', async () => {
    await page.goto(h.url(`/objects/${ids.summary}`));
    await page.getByRole('heading', { level: 1, name: 'summary.txt' }).waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Delete summary.txt?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Yes, delete' }).click();
    await page.waitForURL((u) => u.pathname === '/objects' && u.searchParams.get('location') === '/reports');
    await page.getByText('No objects here.').waitFor();
    assert.equal((await h.srv.api('GET', `/api/v1/objects/${ids.summary}`)).status, 404);
    // A file dropped on the page is uploaded into the folder shown.
    await page.evaluate(`(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['dropped bytes'], 'dropped.txt', { type: 'text/plain' }));
      document.querySelector('.dropzone').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    })()`);
    await page.getByRole('progressbar', { name: 'Upload of dropped.txt' }).waitFor();
    await expectRows(page, ['dropped.txt']);
    const dropped = (await h.srv.api('GET', '/api/v1/objects?name=dropped.txt')).body as Array<{ location: string }>;
    assert.deepEqual(
      dropped.map((o) => o.location),
      ['/reports'],
    );
  });

  it('keys: create (secret once, copy), use, reload, revoke', async () => {
    await h.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(h.srv.url).origin });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Project and keys' }).waitFor();
    await page.getByTestId('current-project').filter({ hasText: 'Default project' }).waitFor();
    await page.getByLabel('Key name').fill('CI reader');
    await page.getByLabel('Role', { exact: true }).selectOption('reader');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretBox = page.getByTestId('new-key-secret');
    await secretBox.waitFor();
    const secret = ((await secretBox.textContent()) ?? '').trim();
    assert.match(secret, /^sk-/);
    await page.getByRole('button', { name: "Copy the new key's secret" }).click();
    await page.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    const table = page.getByRole('table', { name: 'API keys' });
    await table.getByRole('row').filter({ hasText: 'CI reader' }).waitFor();
    // The secret works.
    const ok = await fetch(h.url('/api/v1/objects?limit=1'), { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(ok.status, 200);
    await checkA11y(page, 'keys');
    await screenshot(page, 'keys');
    await phoneCheck(page, 'keys');
    // Never again: after a reload only its name and hint.
    await page.reload();
    const row = table.getByRole('row').filter({ hasText: 'CI reader' });
    await row.waitFor();
    assert.ok(!(await page.content()).includes(secret), 'the secret is gone after a reload');
    assert.ok((await row.textContent())!.includes(secret.slice(-4)), 'its hint is listed');
    assert.equal(await page.getByTestId('new-key-secret').count(), 0);
    // Revoke, with a confirmation.
    await row.getByRole('button', { name: 'Revoke CI reader' }).click();
    await page
      .getByRole('alertdialog', { name: 'Revoke CI reader?' })
      .getByRole('button', { name: 'Yes, revoke' })
      .click();
    await table.getByRole('row').filter({ hasText: 'CI reader' }).waitFor({ state: 'detached' });
    const refused = await fetch(h.url('/api/v1/objects?limit=1'), { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(refused.status, 401);
  });

  it('an admin key switches project; the embeddings settings are shown', async () => {
    const other = await h.srv.api('POST', '/api/v1/projects', { name: 'Telescope project' });
    assert.equal(other.status, 200);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Project and keys' }).waitFor();
    const settings = page.getByRole('definition').filter({ hasText: /orrery-hashed-ngrams|built-in/ });
    await settings.first().waitFor();
    await page.getByLabel('Switch to project').selectOption({ label: 'Telescope project' });
    await page.getByRole('button', { name: 'Switch' }).click();
    await page.getByTestId('current-project').filter({ hasText: 'Telescope project' }).waitFor();
    // The other project's objects: none.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Objects', exact: true }).click();
    await page.getByText('No objects here.').waitFor();
    // The JWT now acts in the other project with the same key: no key was minted for the switch.
    const claims = await page.evaluate(() =>
      JSON.parse(
        atob(
          JSON.parse((globalThis as any).sessionStorage.getItem('orrery.token'))
            .token.split('.')[1]
            .replace(/-/g, '+')
            .replace(/_/g, '/'),
        ),
      ),
    );
    assert.equal(claims.project.id, other.body.id);
    const keysBefore = (await h.srv.api('GET', '/api/v1/apikeys')).body as Array<{ name: string }>;
    assert.ok(!keysBefore.some((k) => /session/i.test(k.name)), 'switching minted no key');
    // Back to the key's own project.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByLabel('Switch to project').selectOption({ label: 'Default project' });
    await page.getByRole('button', { name: 'Switch' }).click();
    await page.getByTestId('current-project').filter({ hasText: 'Default project' }).waitFor();
    assert.deepEqual(h.pageErrors, [], 'no uncaught errors in the pages');
  });
});
