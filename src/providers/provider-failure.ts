/**
 * A provider's failure as the answer to a request that is not a run (embeddings, model lists).
 */
import { OrreryError } from '../util/errors.ts';
import { ProviderError } from './driver.ts';

/**
 * A provider's failure as an answer: the provider refusing the request or the credentials is the
 * caller's configuration to fix (400 at configuration time), anything else is the upstream's (502).
 */
export function providerFailure(err: unknown, what: string, configuring = true): unknown {
  if (!(err instanceof ProviderError)) return err;
  const callerFault = configuring && (err.code === 'provider_bad_request' || err.code === 'provider_auth');
  return new OrreryError(
    err.code,
    callerFault ? 400 : 502,
    `could not ${what}: ${err.message}`,
    err.upstreamStatus ? { upstream_status: err.upstreamStatus } : undefined,
  );
}
