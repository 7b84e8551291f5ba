/**
 * The console's evaluation screens in Chromium, on SQLite and PostgreSQL: scoring a run from its
 * detail (thumbs, a number with a comment, the scores listed, deleting one), the datasets screens
 * (create, add items by hand, add from the runs explorer's current query, items paged, the JSONL
 * export), the evaluators screens (list, create, detail, "Evaluate this run"), and the experiment
 * screens (start one, its figures and answers side by side, a failed item run again, two compared).
 * Every figure the page shows is checked against what the API answers.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { TEST_DIALECTS, seedEcho } from '../support/server.ts';
import { checkA11y, screenshot, signIn, startConsole, type ConsoleHarness } from './browser.ts';
import { dataset, evaluator, twoVersions, until } from '../experiments/support.ts';

interface ApiScore {
  id: string;
  name: string;
  value: number | boolean | string;
  source: string;
  comment?: string;
  evaluator?: string;
}

const HAND_ITEMS = 55; // more than a page of items (50)
const TAGGED = 3; // runs tagged "pick": what the explorer's query copies into the dataset

for (const dialect of TEST_DIALECTS) {
  describe(`console evaluation screens (${dialect})`, () => {
    let h: ConsoleHarness;
    let page: Page;
    const runIds: string[] = [];
    const picked: string[] = [];

    before(async () => {
      h = await startConsole({ dialect });
      const echo = await seedEcho(h.srv);
      for (let i = 0; i < 5; i++) {
        const tags = i < TAGGED ? ['pick'] : ['other'];
        const r = await h.srv.api('POST', '/api/v1/runs', {
          interaction: echo.interaction.id,
          data: { text: `hello planet ${i}` },
          tags,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        runIds.push(r.body.id as string);
        if (i < TAGGED) picked.push(r.body.id as string);
      }
      page = await h.newPage();
      page.on('response', (res) => {
        if (res.url().includes('/api/') && res.status() >= 400)
          console.log(`# ${res.request().method()} ${res.url()} → ${res.status()}`);
      });
      await signIn(page, h);
    });
    after(async () => {
      await h?.close();
      assert.deepEqual(h?.pageErrors ?? [], [], 'no uncaught errors in the page');
    });

    const scoresOf = async (run: string) => {
      const r = await h.srv.api('GET', `/api/v1/runs/${run}/scores`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as ApiScore[];
    };

    it('scores a run from its detail: thumbs, a number with a comment, listed, deleted', async () => {
      const run = runIds[0];
      await page.goto(h.url(`/runs/${run}`));
      const panel = page.getByRole('region', { name: 'Scores' });
      await panel.getByText('No scores yet.').waitFor();

      await panel.getByRole('button', { name: 'Thumbs up' }).click();
      await panel.getByRole('status').filter({ hasText: 'Saved thumbs = true.' }).waitFor();
      await panel.getByRole('button', { name: 'Thumbs up', pressed: true }).waitFor();

      await panel.getByLabel('Comment').fill('concise and right');
      await panel.getByLabel('Score name').fill('quality');
      await panel.getByLabel('Score value').fill('0.75');
      await panel.getByRole('button', { name: 'Add score' }).click();
      await panel.getByRole('status').filter({ hasText: 'Saved quality = 0.75.' }).waitFor();

      const table = panel.getByRole('table', { name: 'Scores of the run' });
      await table.locator('tbody tr').nth(1).waitFor();
      assert.equal(await table.locator('tbody tr').count(), 2);
      const quality = table.getByRole('row').filter({ hasText: 'quality' });
      assert.match(await quality.innerText(), /0\.75[\s\S]*human[\s\S]*concise and right/);

      const stored = await scoresOf(run);
      assert.deepEqual(stored.map((s) => [s.name, s.value, s.source, s.comment ?? null]).sort(), [
        ['quality', 0.75, 'human', 'concise and right'],
        ['thumbs', true, 'human', null],
      ]);
      const runAnswer = await h.srv.api('GET', `/api/v1/runs/${run}`);
      assert.equal(runAnswer.body.scores.quality.value, 0.75, 'the run carries its latest score per name');

      // A bad number never leaves the page: the button stays disabled.
      await panel.getByLabel('Score value').fill('');
      assert.equal(await panel.getByRole('button', { name: 'Add score' }).isDisabled(), true);
      await panel.getByLabel('Score name').fill('has space');
      await panel.getByLabel('Score value').fill('1');
      assert.equal(await panel.getByRole('button', { name: 'Add score' }).isDisabled(), true, 'a bad name is refused');
      await panel.getByLabel('Score name').fill('quality');

      await checkA11y(page, 'the run detail with scores');
      await panel.scrollIntoViewIfNeeded();
      await screenshot(page, 'run-scores');

      await panel.getByRole('button', { name: /^Delete the score quality = 0\.75/ }).click();
      await panel.getByRole('status').filter({ hasText: 'Deleted the score quality = 0.75.' }).waitFor();
      await table.getByRole('row').filter({ hasText: 'quality' }).waitFor({ state: 'detached' });
      assert.deepEqual(
        (await scoresOf(run)).map((s) => s.name),
        ['thumbs'],
      );
    });

    it('shows scores in the runs explorer as columns and facet chips that filter', async () => {
      const verdicts = ['good', 'good', 'bad'];
      for (const [i, value] of verdicts.entries()) {
        const r = await h.srv.api('POST', `/api/v1/runs/${runIds[i + 2]}/scores`, { name: 'verdict', value });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      await page.goto(h.url('/runs'));
      await page.locator('.runs-summary').filter({ hasText: '5 runs' }).waitFor();
      await page.getByText('Columns', { exact: true }).click();
      const picker = page.getByRole('group', { name: 'Score columns' });
      await picker.getByLabel('Score name').fill('verdict');
      await picker.getByRole('button', { name: 'Add score column' }).click();
      const table = page.getByRole('table', { name: 'Runs' });
      await table.getByRole('columnheader', { name: 'Score verdict' }).waitFor();
      const cellOf = async (run: string) => {
        const row = table.locator(`tbody tr[data-row-id="${run}"]`);
        return (await row.locator('td').last().innerText()).trim();
      };
      await table.locator(`tbody tr[data-row-id="${runIds[4]}"] td`).last().filter({ hasText: 'bad' }).waitFor();
      assert.equal(await cellOf(runIds[2]), 'good');
      assert.equal(await cellOf(runIds[1]), '', 'a run without the score shows nothing');

      const facets = page.getByRole('complementary', { name: 'Facets' });
      const good = facets.getByRole('button', { name: 'score verdict: good 2 runs' });
      await good.waitFor();
      await facets.getByRole('button', { name: 'score verdict: bad 1 runs' }).waitFor();
      await checkA11y(page, 'the runs explorer with a score column and facet');
      await good.click();
      await page.locator('.runs-summary').filter({ hasText: '2 runs' }).waitFor();
      const shown = await table
        .locator('tbody tr[data-row-id]')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-row-id')));
      assert.deepEqual(shown.sort(), [runIds[2], runIds[3]].sort());
      assert.match(new URL(page.url()).searchParams.get('scoreFilters') ?? '', /verdict/);
      await facets.getByRole('button', { name: /Remove filter verdict: good/ }).click();
      await page.locator('.runs-summary').filter({ hasText: '5 runs' }).waitFor();
    });

    it('makes a dataset, adds items by hand, pages them, exports them as JSONL', async () => {
      await page.goto(h.url('/datasets'));
      await page.getByRole('heading', { level: 1, name: 'Datasets' }).waitFor();
      await page.getByText('No datasets yet.').waitFor();
      await checkA11y(page, 'the empty datasets screen');
      const form = page.getByRole('form', { name: 'New dataset' });
      await form.getByLabel('Name').fill('planets');
      await form.getByLabel('Description').fill('questions about planets');
      await form.getByRole('button', { name: 'Create dataset' }).click();
      await page.getByRole('heading', { level: 1, name: 'Dataset planets' }).waitFor();
      const datasetId = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByText('No items in this version.').waitFor();

      const items = Array.from({ length: HAND_ITEMS }, (_, i) => ({
        data: { text: `question ${i + 1}` },
        expected: `answer ${i + 1}`,
      }));
      const byHand = page.getByRole('form', { name: 'Add items as JSON' });
      await byHand.getByLabel('Items (JSON)').fill(JSON.stringify(items));
      await byHand.getByRole('button', { name: 'Add items' }).click();
      await byHand
        .getByRole('status')
        .filter({ hasText: `Added ${HAND_ITEMS} items to version 1.` })
        .waitFor();

      const table = page.getByRole('table', { name: 'Items' });
      const pager = page.getByRole('navigation', { name: 'Pages of items' });
      await pager
        .getByRole('status')
        .filter({ hasText: `Items 1–50 of ${HAND_ITEMS}` })
        .waitFor();
      assert.equal(await table.locator('tbody tr').count(), 50);
      assert.match(await table.locator('tbody tr').first().innerText(), /^1\t\{"text":"question 1"\}\tanswer 1\t/);
      assert.equal(await pager.getByRole('button', { name: 'Previous page' }).isDisabled(), true);
      await pager.getByRole('button', { name: 'Next page' }).click();
      await pager
        .getByRole('status')
        .filter({ hasText: `Items 51–${HAND_ITEMS} of ${HAND_ITEMS}` })
        .waitFor();
      assert.equal(await table.locator('tbody tr').count(), HAND_ITEMS - 50);
      assert.match(
        await table.locator('tbody tr').last().innerText(),
        new RegExp(`^${HAND_ITEMS}\\t\\{"text":"question ${HAND_ITEMS}"\\}\\tanswer ${HAND_ITEMS}\\t`),
      );
      assert.equal(await pager.getByRole('button', { name: 'Next page' }).isDisabled(), true);
      assert.equal(new URL(page.url()).searchParams.get('offset'), '50', 'the page is in the URL');

      // Bad JSON is refused in the page, saying why; nothing is sent.
      await byHand.getByLabel('Items (JSON)').fill('[{"data": ');
      await byHand.getByRole('button', { name: 'Add items' }).click();
      await byHand.getByRole('alert').waitFor();
      const listed = await h.srv.api('GET', `/api/v1/datasets/${datasetId}`);
      assert.equal(listed.body.item_count, HAND_ITEMS);

      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Export version 1 as JSONL' }).click();
      const file = await download;
      assert.equal(file.suggestedFilename(), 'planets-v1.jsonl');
      const text = await new Promise<string>((resolve, reject) => {
        void file.createReadStream().then((s) => {
          const chunks: Buffer[] = [];
          s.on('data', (c: Buffer) => chunks.push(c));
          s.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          s.on('error', reject);
        }, reject);
      });
      const lines = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { data: { text: string }; expected: string });
      assert.equal(lines.length, HAND_ITEMS);
      assert.deepEqual(lines[0].data, { text: 'question 1' });
      assert.equal(lines[HAND_ITEMS - 1].expected, `answer ${HAND_ITEMS}`);

      await checkA11y(page, 'the dataset detail');
      await table.getByRole('button', { name: `Remove item ${HAND_ITEMS}`, exact: true }).click();
      await pager
        .getByRole('status')
        .filter({ hasText: `Items 51–${HAND_ITEMS - 1} of ${HAND_ITEMS - 1}` })
        .waitFor();
      assert.equal((await h.srv.api('GET', `/api/v1/datasets/${datasetId}`)).body.item_count, HAND_ITEMS - 1);
      await page.goto(h.url('/datasets'));
      const row = page.getByRole('table', { name: 'Datasets' }).getByRole('row').filter({ hasText: 'planets' });
      assert.match(await row.innerText(), new RegExp(`questions about planets\\s+${HAND_ITEMS - 1}\\s+1`));
    });

    it("adds the runs explorer's current query to a dataset", async () => {
      const made = await h.srv.api('POST', '/api/v1/datasets', { name: 'picked runs' });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      await page.goto(h.url('/runs?q=tags%3Apick'));
      await page
        .locator('.runs-summary')
        .filter({ hasText: `${TAGGED} runs` })
        .waitFor();
      await page.getByText('Add to dataset').click();
      const form = page.getByRole('form', { name: 'Add runs to a dataset' });
      await form.getByText('tags:pick').waitFor();
      await form.getByLabel('Dataset').selectOption({ label: 'picked runs (v1, 0 items)' });
      await form.getByRole('button', { name: 'Add runs' }).click();
      await form
        .getByRole('status')
        .filter({ hasText: `Added ${TAGGED} items to version 1.` })
        .waitFor();
      await checkA11y(page, 'the runs explorer with the add-to-dataset form');

      const items = await h.srv.api('GET', `/api/v1/datasets/${made.body.id}/items?limit=100`);
      assert.equal(items.status, 200, JSON.stringify(items.body));
      const sources = (items.body.items as Array<{ source_run: string }>).map((it) => it.source_run).sort();
      assert.deepEqual(sources, [...picked].sort(), 'exactly the runs of the query, each keeping its run');

      await page.goto(h.url(`/datasets/${made.body.id}`));
      const table = page.getByRole('table', { name: 'Items' });
      await table.getByRole('link', { name: picked[0] }).waitFor();
      assert.equal(await table.locator('tbody tr').count(), TAGGED);
      await screenshot(page, 'dataset');
    });

    it('lists evaluators, makes one, shows it, and evaluates a run with it', async () => {
      await page.goto(h.url('/evaluators'));
      await page.getByRole('heading', { level: 1, name: 'Evaluators' }).waitFor();
      await page.getByText('No evaluators yet.').waitFor();
      const form = page.getByRole('form', { name: 'New evaluator' });
      await form.getByLabel('Name').fill('mentions-hello');
      await form.getByLabel('Type').selectOption({ label: 'Contains' });
      await form.getByLabel('Config (JSON)').fill('{"value": "hello", "case_sensitive": false}');
      await form.getByRole('button', { name: 'Create evaluator' }).click();
      await page.getByRole('heading', { level: 1, name: 'Evaluator mentions-hello' }).waitFor();
      const evaluatorId = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByText(evaluatorId, { exact: true }).waitFor();
      assert.equal(await page.locator('dd.mono').first().innerText(), 'contains');
      await checkA11y(page, 'the evaluator detail');

      // A config that is not JSON is refused in the page.
      await page.goto(h.url('/evaluators'));
      const table = page.getByRole('table', { name: 'Evaluators' });
      await table.getByRole('link', { name: 'mentions-hello' }).waitFor();
      assert.match(await table.getByRole('row').filter({ hasText: 'mentions-hello' }).innerText(), /contains\s+1/);
      await form.getByLabel('Name').fill('broken');
      await form.getByLabel('Config (JSON)').fill('{nope');
      await form.getByRole('button', { name: 'Create evaluator' }).click();
      await page.getByRole('alert').filter({ hasText: 'The config is not JSON' }).waitFor();
      assert.equal((await h.srv.api('GET', '/api/v1/evaluators')).body.length, 1);

      const run = runIds[1];
      await page.goto(h.url(`/runs/${run}`));
      const panel = page.getByRole('form', { name: 'Evaluate this run' });
      await panel.getByLabel('Evaluator').selectOption({ label: 'mentions-hello (contains, v1)' });
      await panel.getByRole('button', { name: 'Evaluate' }).click();
      const region = page.getByRole('region', { name: 'Evaluate this run' });
      await region
        .getByRole('status')
        .filter({ hasText: /^Scored mentions-hello = / })
        .waitFor();
      const status = await region.getByRole('status').innerText();
      const stored = await scoresOf(run);
      assert.equal(stored.length, 1);
      assert.equal(stored[0].name, 'mentions-hello');
      assert.equal(stored[0].source, 'evaluator');
      assert.equal(stored[0].evaluator, evaluatorId);
      assert.equal(stored[0].value, 1, 'the echo answer holds "hello": contains scores 1');
      assert.match(status, /= 1 /);
      // The scores panel of the same page lists the evaluator's score.
      const scores = page.getByRole('table', { name: 'Scores of the run' });
      await scores.getByRole('row').filter({ hasText: 'mentions-hello' }).waitFor();
      await checkA11y(page, 'the run detail after an evaluation');
    });

    it('starts an experiment from two versions, shows its progress, figures and answers side by side', async () => {
      await twoVersions(h.srv, 'Planets');
      await dataset(h.srv, 'three questions', [
        { data: { text: 'hello one' } },
        { data: { text: 'hello two' } },
        { data: { text: 'hello three' } },
      ]);
      await evaluator(h.srv, { name: 'says', type: 'contains', config: { value: 'Say:' } });
      await page.goto(h.url('/experiments'));
      await page.getByRole('heading', { level: 1, name: 'Experiments' }).waitFor();
      await page.getByText('No experiments yet.').waitFor();
      const form = page.getByRole('form', { name: 'New experiment' });
      await form.getByLabel('Name').fill('say or answer');
      await form.getByLabel('Dataset').selectOption({ label: 'three questions (v1, 3 items)' });
      await form.getByLabel('Interaction').selectOption({ label: 'Planets' });
      await form.getByLabel('Variant A').selectOption({ label: 'Planets v1' });
      await form.getByLabel('Variant B').selectOption({ label: 'Planets v1' });
      await form.getByRole('status').filter({ hasText: 'Pick two different versions.' }).waitFor();
      assert.equal(await form.getByRole('button', { name: 'Start experiment' }).isDisabled(), true);
      await form.getByLabel('Variant B').selectOption({ label: 'Planets v2' });
      await form.getByRole('checkbox', { name: 'says (contains)' }).check();
      await checkA11y(page, 'the new experiment form');
      await form.getByRole('button', { name: 'Start experiment' }).click();

      await page.getByRole('heading', { level: 1, name: 'Experiment say or answer' }).waitFor();
      const id = new URL(page.url()).pathname.split('/').pop()!;
      const ended = await until(h.srv, id, ['completed', 'failed', 'canceled']);
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      await page
        .getByRole('status')
        .filter({ hasText: 'completed: 6 of 6 runs done (6 completed, 0 failed)' })
        .waitFor();

      const figures = page.getByRole('table', { name: 'Figures per variant' });
      const rowOf = (name: string) => figures.getByRole('row').filter({ has: page.getByRole('rowheader', { name }) });
      // The test provider echoes the prompt: version 1 says "Say: …", version 2 "Answer: …".
      const api = ended.variants as Array<{ name: string; scores: Record<string, { mean: number }>; tokens: number }>;
      assert.deepEqual(
        api.map((v) => [v.name, v.scores.says.mean]),
        [
          ['Planets v1', 1],
          ['Planets v2', 0],
        ],
      );
      assert.match(
        await rowOf('Planets v1').innerText(),
        new RegExp(`^Planets v1\\t1 \\(100 %, 3\\)\\t3 / 0\\t.*\\t${api[0].tokens}\\t`),
      );
      assert.match(
        await rowOf('Planets v2').innerText(),
        new RegExp(`^Planets v2\\t0 \\(0 %, 3\\)\\t3 / 0\\t.*\\t${api[1].tokens}\\t`),
      );

      const pairs = page.getByRole('table', { name: 'Answers side by side' });
      await pairs.locator('tbody tr').nth(2).waitFor();
      assert.equal(await pairs.locator('tbody tr').count(), 3);
      const first = pairs.locator('tbody tr').first();
      await first.locator('mark').nth(1).waitFor();
      assert.deepEqual(
        await first.locator('mark').allInnerTexts(),
        ['Say:', 'Answer:'],
        'only the differing words are marked',
      );
      assert.match(await first.locator('td').nth(3).innerText(), /Say: hello one[\s\S]*says 1/);
      assert.match(await first.locator('td').nth(4).innerText(), /Answer: hello one[\s\S]*says 0/);
      await checkA11y(page, 'the experiment detail');
      await page.getByRole('heading', { name: 'Comparison' }).scrollIntoViewIfNeeded();
      await screenshot(page, 'experiment');

      // Swapping the sides is in the URL and swaps the columns.
      await page.getByLabel('Left').selectOption('Planets v2');
      await page.getByLabel('Right').selectOption('Planets v1');
      await first.locator('td').nth(3).filter({ hasText: 'Answer: hello one' }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('a'), 'Planets v2');

      await page.goto(h.url('/experiments'));
      const listed = page
        .getByRole('table', { name: 'Experiments' })
        .getByRole('row')
        .filter({ hasText: 'say or answer' });
      assert.match(await listed.innerText(), /completed\s+6 \/ 6\s+Planets v1, Planets v2/);
    });

    it('runs a failed item again, and compares the experiment with another one', async () => {
      const moons = await twoVersions(h.srv, 'Moons');
      const ds = await dataset(h.srv, 'two questions', [
        { data: { text: 'hello one' } },
        { data: { text: 'hello two' } },
      ]);
      const says = await h.srv.api('GET', '/api/v1/evaluators');
      const saysId = (says.body as Array<{ id: string; name: string }>).find((e) => e.name === 'says')!.id;
      const picky = await evaluator(h.srv, {
        name: 'no-two',
        type: 'code',
        config: { body: 'if (input.text === "hello two") throw new Error("no two"); return true;' },
      });
      // The variant names of the first experiment, on the other version each: its "says" means swap.
      const started = await h.srv.api('POST', '/api/v1/experiments', {
        name: 'swapped',
        dataset: ds,
        variants: [
          { name: 'Planets v1', interaction: moons.v2 },
          { name: 'Planets v2', interaction: moons.v1 },
        ],
        evaluators: [saysId, picky],
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      const id = started.body.id as string;
      const ended = await until(h.srv, id, ['completed', 'failed']);
      assert.equal(ended.progress.failed, 2, 'item 2 fails in both variants: its evaluator throws');
      const before = await h.srv.api('GET', `/api/v1/experiments/${id}/items`);
      const oldRuns = Object.values(before.body[1].runs as Record<string, { run: string }>).map((c) => c.run);

      await page.goto(h.url(`/experiments/${id}`));
      await page.getByRole('heading', { level: 1, name: 'Experiment swapped' }).waitFor();
      const pairs = page.getByRole('table', { name: 'Answers side by side' });
      await pairs.locator('tbody tr').nth(1).waitFor();
      assert.equal(await pairs.getByRole('button', { name: 'Run again item 1' }).count(), 0, 'item 1 did not fail');
      await pairs.getByRole('button', { name: 'Run again item 2' }).click();
      // The item's failed runs are made again (new runs), and fail again the same way.
      let after = before;
      for (let i = 0; i < 2400; i++) {
        after = await h.srv.api('GET', `/api/v1/experiments/${id}/items`);
        const runs = Object.values(after.body[1].runs as Record<string, { run?: string; status: string }>);
        if (runs.every((c) => c.status === 'failed' && c.run && !oldRuns.includes(c.run))) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const newRuns = Object.values(after.body[1].runs as Record<string, { run: string }>).map((c) => c.run);
      assert.equal(newRuns.filter((r) => oldRuns.includes(r)).length, 0, `new runs: ${newRuns} after ${oldRuns}`);
      await page
        .getByRole('status')
        .filter({ hasText: 'completed: 4 of 4 runs done (2 completed, 2 failed)' })
        .waitFor();

      const first = (await h.srv.api('GET', '/api/v1/experiments?limit=100')).body.find(
        (e: { name?: string }) => e.name === 'say or answer',
      );
      const compare = page.getByRole('region', { name: 'Compare with another experiment' });
      await compare.getByLabel('Compare with').selectOption({ label: 'say or answer (completed)' });
      assert.equal(new URL(page.url()).searchParams.get('with'), first.id, 'the comparison is in the URL');
      const cmp = await h.srv.api('GET', `/api/v1/experiments/${id}/compare?with=${first.id}`);
      assert.equal(cmp.status, 200, JSON.stringify(cmp.body));
      assert.equal(cmp.body.same_dataset, false);
      const table = compare.getByRole('table', { name: 'Differences with say or answer' });
      await table.waitFor();
      await compare.getByText('different datasets or dataset versions', { exact: false }).waitFor();
      const sign = (n: number, digits: number) =>
        n > 0
          ? `+${Number.isInteger(n) ? n : n.toFixed(digits)}`
          : n < 0
            ? `−${Number.isInteger(n) ? -n : (-n).toFixed(digits)}`
            : '0';
      for (const variant of ['Planets v1', 'Planets v2']) {
        const d = cmp.body.deltas[variant];
        const row = table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: variant }) });
        const cells = await row.locator('td').allInnerTexts();
        const s = d.scores.says;
        assert.equal(cells[0], `${sign(s.mean, 3)} (${sign(Math.round(s.pass_rate * 1000) / 10, 1)} pt)`, variant);
        assert.equal(cells[2], sign(d.tokens, 0), `${variant} tokens`);
      }
      // "Say:" answers score 1 on "says", "Answer:" 0: the first experiment's v1 said, this one's answered.
      assert.ok(cmp.body.deltas['Planets v1'].scores.says.mean > 0, JSON.stringify(cmp.body.deltas));
      assert.ok(cmp.body.deltas['Planets v2'].scores.says.mean < 0, JSON.stringify(cmp.body.deltas));
      await checkA11y(page, 'the experiment compared with another');
      await compare.scrollIntoViewIfNeeded();
      await screenshot(page, 'experiment-compare');
    });
  });
}
