/** What a refused sign-in says to the person at the form: plain words, and when to try again. */
import { ApiError, errorMessage } from '../../api/errors.ts';

/** "10:42 (in 15 minutes)", in the browser's time zone. */
function whenAgain(iso: string, now = Date.now()): string {
  const at = new Date(iso);
  const minutes = Math.max(1, Math.ceil((at.getTime() - now) / 60_000));
  const clock = at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return `${clock} (in ${minutes} minute${minutes === 1 ? '' : 's'})`;
}

const LOCKED = /locked until (\d{4}-\d\d-\d\dT[\d:.]+Z)/;

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function signInError(err: unknown): string {
  if (!(err instanceof ApiError)) return errorMessage(err);
  const details = (err.details ?? {}) as { locked_until?: unknown; retry_after?: unknown };
  // The server says when in its message ("locked until <ISO time>"); details carry it when sent.
  const lockedUntil = typeof details.locked_until === 'string' ? details.locked_until : LOCKED.exec(err.message)?.[1];
  if (lockedUntil && !Number.isNaN(Date.parse(lockedUntil)))
    return `Too many failed sign-ins: this account is locked. Try again at ${whenAgain(lockedUntil)}, or ask an admin for a password reset link.`;
  if (err.status === 429) {
    const s = typeof details.retry_after === 'number' ? details.retry_after : undefined;
    const wait = s === undefined ? 'a minute' : `${s} second${s === 1 ? '' : 's'}`;
    return `Too many sign-in attempts from this address. Try again in ${wait}.`;
  }
  if (err.status === 401 && /email or password is wrong/.test(err.message)) return 'Wrong email or password.';
  return `${capital(err.message)}.`.replace(/\.\.$/, '.');
}
