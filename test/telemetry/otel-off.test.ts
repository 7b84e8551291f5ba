/**
 * Without OTEL_* settings nothing of the OpenTelemetry SDK is loaded (start time and idle memory
 * as before); with them it is, which shows the check sees it. A file of its own: the process must
 * not have loaded the SDK for another test first.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { TEST_DIALECTS, seedEcho, startTestServer } from '../support/server.ts';
import { telemetrySettingsOf } from '../../src/telemetry/settings.ts';

const require = createRequire(import.meta.url);
/**
 * The SDK's packages are CommonJS: loaded from ESM too, they are in the require cache. The API
 * package is not counted: prom-client loads it (for exemplars) with or without telemetry.
 */
const otelLoaded = () =>
  Object.keys(require.cache).filter((k) => k.includes('@opentelemetry/') && !k.includes('@opentelemetry/api/'));

const dialect = TEST_DIALECTS[0];
describe(`${dialect}: the OpenTelemetry SDK is loaded only when configured`, () => {
  it('serves a run without loading it, and loads it once an endpoint is set', async () => {
    const off = await startTestServer(dialect);
    try {
      const { interaction } = await seedEcho(off);
      const r = await off.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'hi' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(otelLoaded(), []);
    } finally {
      await off.close();
    }
    const on = await startTestServer(dialect, {
      telemetry: telemetrySettingsOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
        OTEL_BSP_EXPORT_TIMEOUT: '100',
      }),
    });
    try {
      assert.ok(otelLoaded().length > 0, 'the SDK is loaded with an endpoint');
    } finally {
      await on.close();
    }
  });
});
