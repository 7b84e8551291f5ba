/**
 * The console's interactions, prompts/playground and environments screens (issue 19, points 4
 * and 5), in a real Chromium against a real server (SQLite): create an environment (its key is
 * never shown again, only its hint) and list its models; create an interaction, edit its template
 * in the code editor, save and reload; an invalid schema is refused; publish a version with a tag;
 * the playground renders the prompt for sample data and runs it, streamed, linked to the run.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
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

const SECRET = 'sk-console-secret-key-XYZ9876';

/** Replaces the whole text of a CodeMirror editor (its textbox is named by the editor's label). */
async function typeInto(page: Page, name: string, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name, exact: true });
  await box.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

describe('console: environments, interactions and the playground (sqlite)', () => {
  let h: ConsoleHarness;
  let page: Page;
  const received: string[] = [];
  let interactionId = '';

  before(async () => {
    h = await startConsole();
    await seedEcho(h.srv);
    page = await h.newPage();
    // Every API answer the page receives, to prove the provider key never comes back.
    page.on('response', (res) => {
      if (!new URL(res.url()).pathname.startsWith('/api/')) return;
      if ((res.headers()['content-type'] ?? '').includes('event-stream')) return;
      void res.text().then(
        (t) => received.push(t),
        () => {},
      );
    });
    await signIn(page, h);
  });
  after(async () => {
    await h?.close();
  });

  it('creates an environment: its key is shown only as a hint; lists its models', async () => {
    await page.goto(h.url('/environments'));
    await page.getByRole('heading', { level: 1, name: 'Environments' }).waitFor();
    await page
      .getByRole('table', { name: 'Environments' })
      .getByRole('row', { name: /Test env/ })
      .waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Local test');
    await page.getByLabel('Provider').selectOption('test');
    await page.getByLabel('Default model').fill('echo');
    await page.getByLabel(/^API key/).fill(SECRET);
    await page.getByRole('button', { name: 'Create environment' }).click();

    const row = page.getByRole('table', { name: 'Environments' }).getByRole('row', { name: /Local test/ });
    await row.waitFor();
    assert.match(await row.innerText(), /…9876/, 'the key hint is listed');
    assert.equal(await page.getByLabel(/^API key/).inputValue(), '', 'the key field is cleared');
    // The models of the new environment (selected after creation).
    await page.getByRole('heading', { name: 'Models of Local test' }).waitFor();
    await page
      .getByRole('table', { name: 'Models of Local test' })
      .getByRole('row', { name: /echo/ })
      .first()
      .waitFor();
    const envs = (await h.srv.api('GET', '/api/v1/environments')).body as Array<{ name: string; apikey_hint?: string }>;
    assert.equal(envs.find((e) => e.name === 'Local test')?.apikey_hint, '…9876');

    assert.ok(!(await page.content()).includes(SECRET), 'the key is not in the page');
    await page.waitForLoadState('networkidle');
    assert.ok(received.length > 3, 'responses were captured');
    assert.ok(!received.some((t) => t.includes(SECRET)), 'no response the page received holds the key');

    await checkA11y(page, 'environments');
    await screenshot(page, 'environments');
    await atPhoneWidth(page, async () => {
      await assertNoHorizontalOverflow(page);
      await screenshot(page, 'environments-phone');
    });
  });

  it('creates an interaction, edits its template in the editor, saves, and keeps it across a reload', async () => {
    await page.getByRole('link', { name: 'Interactions', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Interactions' }).waitFor();
    await page.getByRole('table', { name: 'Interactions' }).getByRole('row', { name: /Echo/ }).waitFor();
    await page
      .getByRole('table', { name: 'Prompt templates' })
      .getByRole('row', { name: /echo prompt/ })
      .waitFor();
    await checkA11y(page, 'interactions');
    await screenshot(page, 'interactions');
    await atPhoneWidth(page, () => assertNoHorizontalOverflow(page));

    // A stored prompt template, edited on its own.
    await page.getByRole('link', { name: 'echo prompt' }).click();
    await typeInto(page, 'Content of echo prompt', 'Repeat: {{text}}');
    await page.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved “echo prompt”' }).waitFor();
    const prompts = (await h.srv.api('GET', '/api/v1/prompts')).body as Array<{ name: string; content: string }>;
    assert.equal(prompts.find((p) => p.name === 'echo prompt')?.content, 'Repeat: {{text}}');
    await page.getByRole('button', { name: 'Close' }).click();

    await page.getByLabel('Name', { exact: true }).fill('Sky questions');
    await page.getByLabel('Environment').selectOption({ label: 'Test env (test)' });
    await page.getByLabel('Model').locator('option[value="echo"]').waitFor({ state: 'attached' });
    await page.getByLabel('Model').selectOption('echo');
    await page.getByRole('button', { name: 'Create interaction' }).click();
    await page.waitForURL(/\/interactions\/[^/]+$/);
    interactionId = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('heading', { level: 1, name: 'Sky questions' }).waitFor();

    // The editor's language follows the content type.
    const editor = page.locator('.segment .code-editor').first();
    assert.equal(await editor.getAttribute('data-language'), 'handlebars');
    await page.getByLabel('Content type of segment 1').selectOption('jst');
    assert.equal(await editor.getAttribute('data-language'), 'javascript');
    await page.getByLabel('Content type of segment 1').selectOption('handlebars');
    await typeInto(page, 'Template 1', 'Please answer: {{question}}');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Saved$/ })
      .waitFor();
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Sky questions' }).waitFor();
    assert.equal(
      await page.getByRole('textbox', { name: 'Template 1', exact: true }).innerText(),
      'Please answer: {{question}}',
    );
    const ix = (await h.srv.api('GET', `/api/v1/interactions/${interactionId}`)).body;
    assert.equal(ix.prompts[0].template.content, 'Please answer: {{question}}');
    assert.equal(ix.model, 'echo');
  });

  it('refuses an invalid schema: the error shows and nothing is saved', async () => {
    const before = (await h.srv.api('GET', `/api/v1/interactions/${interactionId}`)).body;
    await typeInto(page, 'Result schema', '{"type": "objet"');
    await page.getByText(/Result schema: not valid JSON/).waitFor();
    await typeInto(page, 'Result schema', '{"type": "objet"}');
    await page.getByText(/Result schema: not a valid JSON schema/).waitFor();
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not saved' }).waitFor();
    const after = (await h.srv.api('GET', `/api/v1/interactions/${interactionId}`)).body;
    assert.equal(after.edit_revision, before.edit_revision, 'not saved');
    assert.equal(after.result_schema, undefined);
    // Back to no result schema: nothing left to save.
    await typeInto(page, 'Result schema', '');
    await page.getByRole('button', { name: 'Save draft' }).and(page.locator(':disabled')).waitFor();
  });

  it('publishes a version with a tag and lists it', async () => {
    await page.getByLabel('Version tags').fill('production');
    await page.getByRole('button', { name: 'Publish version' }).click();
    await page.getByRole('status').filter({ hasText: 'Published version 1' }).waitFor();
    const row = page.getByRole('table', { name: 'Versions' }).getByRole('row', { name: /v1/ });
    await row.waitFor();
    assert.match(await row.innerText(), /production/);
    const versions = (await h.srv.api('GET', `/api/v1/interactions/${interactionId}/versions`)).body;
    assert.deepEqual(
      versions.map((v: { version: number; tags: string[] }) => [v.version, v.tags]),
      [[1, ['production']]],
    );
  });

  it('the playground renders the prompt for sample data, runs it streamed, and links the run', async () => {
    const messages = page.getByRole('list', { name: 'Rendered prompt' });
    // Pre-filled from the input schema's example.
    await messages.getByText('Please answer: Why is the sky blue?').waitFor();
    await typeInto(page, 'Sample data', '{"question": "Why is grass green?"}');
    await messages.getByText('Please answer: Why is grass green?').waitFor();
    assert.match(await messages.getByRole('listitem').first().innerText(), /^user/);
    // An edit not saved yet renders at once (POST /prompts/render); Run saves it, then runs it.
    await typeInto(page, 'Template 1', 'Kindly answer: {{question}}');
    await messages.getByText('Kindly answer: Why is grass green?').waitFor();

    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.getByTestId('playground-answer').filter({ hasText: 'Kindly answer: Why is grass green?' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Run completed' }).waitFor();
    const link = page.getByRole('link', { name: /^Open run / });
    const runId = ((await link.getAttribute('href')) ?? '').split('/').pop()!;
    assert.ok(runId);
    const run = (await h.srv.api('GET', `/api/v1/runs/${runId}`)).body;
    assert.equal(run.status, 'completed');
    assert.deepEqual(run.parameters, { question: 'Why is grass green?' });
    assert.equal(run.interaction.id ?? run.interaction, interactionId);
    assert.equal(run.modelId ?? run.config?.model, 'echo');
    assert.ok(run.tags.includes('playground'));

    await checkA11y(page, 'interaction editor');
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'interaction-editor');
    await atPhoneWidth(page, async () => {
      await assertNoHorizontalOverflow(page);
      await page.getByRole('heading', { name: 'Playground' }).scrollIntoViewIfNeeded();
      await screenshot(page, 'interaction-editor-phone');
    });

    await link.click();
    await page.waitForURL((u) => u.pathname === `/runs/${runId}`);
    assert.deepEqual(h.pageErrors, []);
  });
});
