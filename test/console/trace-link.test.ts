/**
 * The run page's trace (src/telemetry): a traced run shows its trace id, linked through
 * ORRERY_TRACE_URL with `{trace_id}` filled in.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { signIn, startConsole, type ConsoleHarness } from './browser.ts';
import { seedEcho } from '../support/server.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { telemetrySettingsOf } from '../../src/telemetry/settings.ts';

describe('console run page: the trace link (sqlite)', () => {
  let h: ConsoleHarness;
  let page: Page;
  let receiver: OtlpReceiver;

  before(async () => {
    receiver = await startOtlpReceiver();
    h = await startConsole({
      config: {
        telemetry: telemetrySettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_BSP_SCHEDULE_DELAY: '10' }),
        traceUrl: 'https://grafana.example/explore?trace={trace_id}',
      },
    });
    page = await h.newPage();
    await signIn(page, h);
  });
  after(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('links the run to its trace', async () => {
    const { interaction } = await seedEcho(h.srv);
    const r = await h.srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'traced' } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await page.goto(h.url(`/runs/${r.body.id}`));
    const link = page.getByRole('link', { name: r.body.trace_id });
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), `https://grafana.example/explore?trace=${r.body.trace_id}`);
  });
});
