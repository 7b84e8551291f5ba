/**
 * Telemetry as the config asks: the no-op when no OTLP endpoint is set (nothing of the
 * OpenTelemetry SDK is imported), else the SDK's, loaded here on demand (telemetry/tracing.ts).
 */
import { NO_TELEMETRY, type Telemetry } from './hooks.ts';
import type { TelemetrySettings } from './settings.ts';

export async function startTelemetry(
  settings: TelemetrySettings | undefined,
  opts: { onDropped: (n: number) => void },
): Promise<Telemetry> {
  if (!settings) return NO_TELEMETRY;
  const { startTracing } = await import('./tracing.ts');
  return startTracing(settings, opts);
}
