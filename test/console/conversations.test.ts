/**
 * The console's conversations in a real Chromium, on each database of the run: the playground
 * given tools (a bad tools JSON refused at the field, nothing sent), the test provider's `tools`
 * model calling them, each call answered by hand (content, is_error) through POST
 * /runs/tool-results, a user message through POST /runs/user-message, the final answer; then the
 * run detail of the last run showing every turn (messages, tool calls and their arguments, tool
 * results, errors flagged) and the links to the previous and next runs. Untrusted text stays text.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page, Request } from 'playwright-core';
import {
  assertNoHorizontalOverflow,
  atPhoneWidth,
  checkA11y,
  screenshot,
  signIn,
  startConsole,
  type ConsoleHarness,
} from './browser.ts';
import { TEST_DIALECTS } from '../support/server.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
/** Enough arguments that their JSON is folded behind a summary (more than 12 lines). */
const BOOK_FIELDS = ['from', 'to', 'date', 'seat', 'meal', 'class', 'name', 'email', 'phone', 'bags', 'notes', 'code'];
const BOOK = {
  name: 'book_trip',
  input_schema: {
    type: 'object',
    properties: Object.fromEntries(BOOK_FIELDS.map((f) => [f, { type: 'string' }])),
    required: BOOK_FIELDS,
  },
};
const HOSTILE = '<img src=x onerror="window.__pwned=1"><b>21C</b>';

/** Replaces the whole text of a CodeMirror editor (its textbox is named by the editor's label). */
async function typeInto(page: Page, name: string, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name, exact: true });
  await box.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

const isRunWrite = (r: Request) =>
  r.method() === 'POST' && /\/api\/v1\/(runs|execute)(\/|$|\?)/.test(new URL(r.url()).pathname + '/');

for (const dialect of TEST_DIALECTS) {
  describe(`console conversations (${dialect})`, () => {
    let h: ConsoleHarness;
    let page: Page;
    let interactionId = '';
    const runWrites: string[] = [];
    const turnIds: string[] = [];

    before(async () => {
      h = await startConsole({ dialect });
      const env = await h.srv.api('POST', '/api/v1/environments', {
        name: 'Tools env',
        provider: 'test',
        default_model: 'tools',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const ix = await h.srv.api('POST', '/api/v1/interactions', {
        name: 'Weather bot',
        status: 'draft',
        environment: env.body.id,
        prompts: [
          {
            type: 'template',
            template: { role: 'system', content: 'You answer about weather.', content_type: 'text' },
          },
          { type: 'template', template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' } },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      interactionId = ix.body.id;
      page = await h.newPage();
      page.on('request', (r) => {
        if (isRunWrite(r)) runWrites.push(`${r.method()} ${new URL(r.url()).pathname}`);
      });
      await signIn(page, h);
    });
    after(async () => {
      await h?.close();
      assert.deepEqual(h?.pageErrors ?? [], [], 'no uncaught errors in the page');
    });

    it('a bad tools JSON shows what is wrong and sends nothing', async () => {
      await page.goto(h.url(`/interactions/${interactionId}`));
      await page.getByRole('heading', { name: 'Playground' }).waitFor();
      await typeInto(page, 'Sample data', '{"city": "Paris"}');
      const alert = page.getByRole('alert').filter({ hasText: /^Tools:/ });
      const cases: Array<[string, RegExp]> = [
        ['[{"name": "get_weather", "input_schema": {"type": "object"}', /not valid JSON/],
        ['{"name": "get_weather"}', /must be a JSON array/],
        ['[{"name": "<img src=x onerror=alert(1)>", "input_schema": {}}]', /tool 1: name must be 1 to 64/],
        ['[{"name": "a", "input_schema": {"type": "string"}}]', /input_schema must have type "object"/],
        ['[{"name": "a", "input_schema": {}, "strict": true}]', /unknown field strict/],
        ['[{"name": "a", "input_schema": {}}, {"name": "a", "input_schema": {}}]', /the name a is used twice/],
        [JSON.stringify(Array.from({ length: 129 }, (_, i) => ({ name: `t${i}`, input_schema: {} }))), /at most 128/],
      ];
      for (const [text, error] of cases) {
        await typeInto(page, 'Tools (tool_definitions JSON)', text);
        await alert.filter({ hasText: error }).waitFor();
        await page.getByRole('button', { name: 'Run', exact: true }).click();
        await page
          .getByRole('alert')
          .filter({ hasText: 'Nothing was sent: the tools are not valid' })
          .filter({ hasText: error })
          .waitFor();
      }
      assert.equal(await page.locator('img[src="x"]').count(), 0, 'a hostile tool name is text');
      assert.deepEqual(runWrites, [], 'no run was started');
      assert.equal((await h.srv.api('GET', '/api/v1/runs?limit=10')).body.length, 0);
    });

    it('gives tools, answers the calls by hand, continues with a message, until the model answers', async () => {
      await typeInto(page, 'Tools (tool_definitions JSON)', JSON.stringify([WEATHER, BOOK], null, 2));
      await page.getByText('2 tools: get_weather, book_trip').waitFor();
      assert.equal(
        await page
          .getByRole('alert')
          .filter({ hasText: /^Tools:/ })
          .count(),
        0,
      );
      await page.getByRole('button', { name: 'Run', exact: true }).click();

      // Turn 1: the model calls both tools; the arguments are shown, the long ones folded.
      const answers = page.getByRole('form', { name: 'Answer the tool calls' });
      const call1 = answers.getByRole('group', { name: 'Tool call get_weather (toolu_test_1_1)' });
      await call1.waitFor();
      assert.match(await call1.getByLabel('Arguments of toolu_test_1_1').innerText(), /"city": "text"/);
      const booking = answers.getByRole('group', { name: 'Tool call book_trip (toolu_test_1_2)' });
      const fold = booking.locator('details.json-fold');
      assert.equal(await fold.getAttribute('open'), null, 'long arguments start folded');
      await booking.getByText('Arguments of toolu_test_1_2').click();
      assert.match(await booking.getByLabel('Arguments of toolu_test_1_2').innerText(), /"notes": "text"/);
      await checkA11y(page, 'playground with tool calls');
      await screenshot(page, 'conversation-playground-calls');

      await answers.getByLabel('Result for get_weather (toolu_test_1_1)').fill(HOSTILE);
      await answers.getByLabel('Result for book_trip (toolu_test_1_2)').fill('no seats left');
      await answers.getByLabel('The result of toolu_test_1_2 is an error').check();
      await answers.getByRole('button', { name: 'Send tool results' }).click();

      // Turn 2: the results as sent, then the model's answer made of them.
      const turn2 = page.getByRole('region', { name: 'Playground turn 2' });
      await turn2.getByRole('group', { name: 'Tool result for toolu_test_1_2 (error)' }).waitFor();
      assert.equal(await turn2.getByRole('group', { name: 'Tool result for toolu_test_1_1', exact: true }).count(), 1);
      await turn2.getByText(`get_weather: ${HOSTILE}`).waitFor();
      await turn2.getByText('book_trip failed: no seats left').waitFor();
      assert.equal(await page.locator('.turns img, .turns b').count(), 0, 'tool text is never HTML');
      assert.equal(await page.evaluate('window.__pwned'), undefined);
      await page.getByRole('status').filter({ hasText: 'The model answered (turn 2)' }).waitFor();

      // A user message: the model calls the tools again (turn 3), answered, then answers (turn 4).
      await page.getByLabel('Your message').fill('And in Lyon?');
      await page.getByRole('button', { name: 'Send message' }).click();
      const turn3 = page.getByRole('region', { name: 'Playground turn 3' });
      await turn3.getByText('And in Lyon?').waitFor();
      await answers.getByRole('group', { name: 'Tool call get_weather (toolu_test_3_1)' }).waitFor();
      await answers.getByLabel('Result for get_weather (toolu_test_3_1)').fill('Rain');
      await answers.getByLabel('Result for book_trip (toolu_test_3_2)').fill('Booked');
      await answers.getByRole('button', { name: 'Send tool results' }).click();
      const turn4 = page.getByRole('region', { name: 'Playground turn 4' });
      await turn4.getByText('get_weather: Rain').waitFor();
      await page.getByRole('status').filter({ hasText: 'The model answered (turn 4)' }).waitFor();
      assert.equal(await answers.count(), 0, 'no call is left to answer');
      await screenshot(page, 'conversation-playground');

      // What the console sent: one run and three continuations, each through its route.
      assert.deepEqual(runWrites, [
        'POST /api/v1/runs',
        'POST /api/v1/runs/tool-results',
        'POST /api/v1/runs/user-message',
        'POST /api/v1/runs/tool-results',
      ]);
      for (let n = 1; n <= 4; n++) {
        const href = await page.getByRole('link', { name: new RegExp(`^Open turn ${n}: run `) }).getAttribute('href');
        turnIds.push(href!.split('/').pop()!);
      }
      const runs = await Promise.all(turnIds.map(async (id) => (await h.srv.api('GET', `/api/v1/runs/${id}`)).body));
      assert.deepEqual(
        runs.map((r) => r.previous_run),
        [undefined, turnIds[0], turnIds[1], turnIds[2]],
      );
      assert.deepEqual(
        runs[0].tool_use.map((t: { tool_name: string }) => t.tool_name),
        ['get_weather', 'book_trip'],
      );
      assert.deepEqual(runs[1].prompt, [
        {
          role: 'tool',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_test_1_1', content: HOSTILE },
            { type: 'tool_result', tool_use_id: 'toolu_test_1_2', content: 'no seats left', is_error: true },
          ],
        },
      ]);
      assert.deepEqual(runs[2].prompt, [{ role: 'user', content: 'And in Lyon?' }]);
      assert.equal(runs[3].finish_reason, 'stop');
      assert.deepEqual(runs[3].result, [{ type: 'text', value: 'get_weather: Rain\nbook_trip: Booked' }]);
      for (const r of runs) assert.ok(r.tags.includes('playground'), `run ${r.id} is tagged playground`);
    });

    it('the run detail of the last run shows every turn and the links to the previous and next runs', async () => {
      const [first, second, third, last] = turnIds;
      await page.goto(h.url(`/runs/${last}`));
      const turns = page.getByRole('list', { name: 'Turns' });
      await turns.getByRole('region', { name: `Turn 4, run ${last}` }).waitFor();
      assert.equal(
        await turns
          .getByRole('listitem')
          .filter({ has: page.locator('.turn-head') })
          .count(),
        4,
      );

      const t1 = turns.getByRole('region', { name: `Turn 1, run ${first}` });
      assert.match(await t1.getByLabel('Turn 1, message 1 (system)').innerText(), /You answer about weather\./);
      assert.match(await t1.getByLabel('Turn 1, message 2 (user)').innerText(), /Weather in Paris\?/);
      await t1.getByRole('group', { name: 'Tool call get_weather (toolu_test_1_1)' }).waitFor();
      await t1.getByRole('group', { name: 'Tool call book_trip (toolu_test_1_2)' }).waitFor();
      assert.ok(await t1.getByRole('link', { name: first }).isVisible(), 'an earlier turn links its run');

      const t2 = turns.getByRole('region', { name: `Turn 2, run ${second}` });
      await t2.getByRole('group', { name: 'Tool result for toolu_test_1_2 (error)' }).waitFor();
      assert.match(
        await t2.getByRole('group', { name: 'Tool result for toolu_test_1_1', exact: true }).innerText(),
        /<img src=x onerror="window.__pwned=1"><b>21C<\/b>/,
      );
      await t2.getByText('book_trip failed: no seats left').waitFor();
      const t3 = turns.getByRole('region', { name: `Turn 3, run ${third}` });
      assert.match(await t3.getByLabel('Turn 3, message 1 (user)').innerText(), /And in Lyon\?/);
      await t3.getByRole('group', { name: 'Tool call get_weather (toolu_test_3_1)' }).waitFor();
      const t4 = turns.getByRole('region', { name: `Turn 4, run ${last}` });
      await t4.getByText('this run').waitFor();
      await t4.getByText('get_weather: Rain').waitFor();
      assert.equal(await page.locator('.turns img, .turns b').count(), 0, 'tool text is never HTML');

      const links = page.getByRole('navigation', { name: 'Conversation' });
      await links.getByText('none yet').waitFor();
      await checkA11y(page, 'run detail of a conversation');
      await screenshot(page, 'conversation-run-detail');
      await atPhoneWidth(page, async () => {
        await assertNoHorizontalOverflow(page);
      });

      // The previous run's detail: its next run is the last one, its turns stop at turn 3.
      await links.getByRole('link', { name: `Previous run ${third}` }).click();
      await page.waitForURL((u) => u.pathname === `/runs/${third}`);
      await page.getByRole('region', { name: `Turn 3, run ${third}` }).waitFor();
      assert.equal(await page.getByRole('region', { name: /^Turn 4,/ }).count(), 0);
      await page
        .getByRole('navigation', { name: 'Conversation' })
        .getByRole('link', { name: `Next run ${last}` })
        .click();
      await page.waitForURL((u) => u.pathname === `/runs/${last}`);
      // The first run has no previous run, and its next run is the second.
      await page.goto(h.url(`/runs/${first}`));
      const firstLinks = page.getByRole('navigation', { name: 'Conversation' });
      await firstLinks.getByText('none (the first turn)').waitFor();
      await firstLinks.getByRole('link', { name: `Next run ${second}` }).waitFor();
    });

    it('thinking parts of a stored prompt are shown, folded, as text', async () => {
      // The Anthropic door stores an assistant turn's thinking blocks as the prompt was sent.
      const env = await h.srv.api('POST', '/api/v1/environments', {
        name: 'think',
        provider: 'test',
        default_model: 'echo',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const res = await fetch(`${h.srv.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': h.srv.adminKey, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'think/echo',
          max_tokens: 64,
          messages: [
            { role: 'user', content: 'Hi' },
            {
              role: 'assistant',
              content: [
                { type: 'thinking', thinking: 'The user greets <i>me</i>.', signature: 'sig' },
                { type: 'text', text: 'Hello!' },
              ],
            },
            { role: 'user', content: 'Again' },
          ],
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const list = await h.srv.api('GET', '/api/v1/runs?limit=100');
      const run = list.body.find((r: { environment?: { id?: string } | string }) =>
        typeof r.environment === 'string' ? r.environment === env.body.id : r.environment?.id === env.body.id,
      );
      assert.ok(run, 'the door run is listed');
      await page.goto(h.url(`/runs/${run.id}`));
      const assistant = page.getByRole('heading', { name: 'Prompt' }).locator('..');
      const thinking = assistant.locator('details.thinking');
      await thinking.waitFor();
      assert.equal(await thinking.getAttribute('open'), null, 'thinking starts folded');
      await thinking.getByText('Thinking').click();
      assert.match(await assistant.getByLabel('Message 2 (assistant), part 1: thinking').innerText(), /<i>me<\/i>/);
      assert.equal(await assistant.locator('i').count(), 0);
      assert.match(await assistant.getByLabel('Message 2 (assistant), part 2').innerText(), /Hello!/);
    });
  });
}
