/**
 * The bound on what a model may answer (ORRERY_MAX_RESULT_SIZE, bytes of text): a provider that
 * answers 50 MB, or streams without end, would otherwise fill the server's memory and the run's
 * stored document. Past the bound the call is cut (a stream's connection is closed) and fails with
 * `provider_result_too_large`; the run fails with it. provider-http.ts bounds the bytes on the
 * wire as well, before any driver parses them.
 */
import { ProviderError, type ModelDriver, type ProviderConnection } from './driver.ts';
import { DEFAULT_MAX_RESULT_BYTES, MAX_RESULT_VARIABLE } from './outbound.ts';

/** An answer longer than its bound on the wire (or one event of a stream): the exchange is stopped there. */
export class AnswerTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the answer passed ${limit} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

const maxResultOf = (conn: ProviderConnection): number => conn.outbound?.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;

export function resultTooLarge(who: string, limit: number): ProviderError {
  return new ProviderError(
    'provider_result_too_large',
    `${who} answered more than ${limit} bytes of text, the largest result this server keeps (${MAX_RESULT_VARIABLE}): the answer was cut there; ask for a shorter one (max_tokens) or raise the bound`,
  );
}

/** `driver` whose answers past the connection's result bound fail, a stream as soon as it passes it. */
export function resultBoundedDriver(driver: ModelDriver): ModelDriver {
  return {
    provider: driver.provider,
    async complete(conn, req, signal) {
      const completion = await driver.complete(conn, req, signal);
      const limit = maxResultOf(conn);
      // A string's UTF-8 bytes are at most 3 per UTF-16 unit: most answers need no count.
      if (completion.text.length * 3 > limit && Buffer.byteLength(completion.text) > limit)
        throw resultTooLarge(driver.provider, limit);
      return completion;
    },
    async *stream(conn, req, signal) {
      const limit = maxResultOf(conn);
      let bytes = 0;
      // Leaving the loop by a throw closes the driver's generator, which closes its connection.
      for await (const chunk of driver.stream(conn, req, signal)) {
        if (chunk.text) {
          bytes += Buffer.byteLength(chunk.text);
          if (bytes > limit) throw resultTooLarge(driver.provider, limit);
        }
        yield chunk;
      }
    },
    ...(driver.listModels ? { listModels: driver.listModels.bind(driver) } : {}),
  };
}
