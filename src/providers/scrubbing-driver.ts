/**
 * Every provider call goes through the registry's drivers, so their failures are scrubbed of the
 * environment's secrets here, once, before any run, answer or model list sees the text.
 */
import { ProviderError, type ModelDriver, type ProviderConnection } from './driver.ts';
import { scrubConnectionSecrets } from './secret-scrub.ts';

/** `err` with the connection's secrets cut from its message; the same error when there were none. */
export function scrubbedError(err: unknown, conn: ProviderConnection | undefined): unknown {
  if (!(err instanceof Error)) return typeof err === 'string' ? scrubConnectionSecrets(err, conn) : err;
  const message = scrubConnectionSecrets(err.message, conn);
  if (message === err.message) return err;
  // A new error, not a patched one: the old stack and cause still quote the secret.
  if (err instanceof ProviderError)
    return new ProviderError(err.code, message, err.upstreamStatus, err.retryable, err.retryAfterMs);
  const clean = new Error(message);
  clean.name = err.name;
  return clean;
}

/** `driver` whose every failure (blocking, mid-stream, model list) is scrubbed of the connection's secrets. */
export function scrubbingDriver(driver: ModelDriver): ModelDriver {
  const listModels = driver.listModels?.bind(driver);
  return {
    provider: driver.provider,
    complete: (conn, req, signal) =>
      driver.complete(conn, req, signal).catch((err: unknown) => {
        throw scrubbedError(err, conn);
      }),
    async *stream(conn, req, signal) {
      try {
        yield* driver.stream(conn, req, signal);
      } catch (err) {
        throw scrubbedError(err, conn);
      }
    },
    ...(listModels
      ? {
          listModels: (conn: ProviderConnection, signal?: AbortSignal) =>
            listModels(conn, signal).catch((err: unknown) => {
              throw scrubbedError(err, conn);
            }),
        }
      : {}),
  };
}
