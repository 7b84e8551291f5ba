/**
 * Standard Webhooks signatures (standardwebhooks.com): a secret is `whsec_<base64 key>`; each
 * request carries `webhook-id` (the same on every retry of one delivery), `webhook-timestamp`
 * (seconds, when this attempt was sent) and `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`.
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new subscription's signing secret. */
export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString('base64');

/** The project's secret for notify_endpoints: derived from the server's key, the same on every replica. */
export const projectNotifySecret = (serverKey: Buffer, project: string): string =>
  PREFIX + Buffer.from(hkdfSync('sha256', serverKey, 'orrery-notify', project, 32)).toString('base64');

export function signatureHeaders(secret: string, id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000));
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` };
}
