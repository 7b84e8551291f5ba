/**
 * Sign-in: email and password first, "Sign in with SSO" when the server says an identity provider
 * is configured (GET /auth/config), and an API key as the secondary way (for key-only installs
 * and programs' owners). Whatever the way, the page then goes to a path of this origin only.
 */
import { useState, type FormEvent } from 'react';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { rememberAfterSso, signIn, signInWithPassword, endReason } from '../../api/session.ts';
import { ApiError, errorMessage } from '../../api/errors.ts';
import { sameOriginRedirect } from './redirect.ts';
import { signInError } from './messages.ts';
import { useAuthConfig } from './auth-config.ts';

export interface SignInSearch {
  /** Where to go after signing in: a path of this console. */
  redirect?: string;
}

// The key is always present: the router merges the raw search under the validated one, so leaving
// a refused redirect out would let the raw value through.
export const validateSignInSearch = (raw: Record<string, unknown>): SignInSearch => ({
  redirect: sameOriginRedirect(raw.redirect, window.location.origin),
});

const route = getRouteApi('/signin');

export function SignInPage() {
  const { redirect } = route.useSearch();
  const navigate = useNavigate();
  const config = useAuthConfig();
  // Why the previous session ended (suspended, timed out…), said once.
  const [ended] = useState(endReason);
  const [showKey, setShowKey] = useState(false);

  const done = async () => {
    // Checked again where it is used: whatever reached the search, only this origin's paths go.
    const to = sameOriginRedirect(redirect, window.location.origin);
    if (to) await navigate({ href: to });
    else await navigate({ to: '/runs' });
  };

  const sso = config.data?.sso ? (config.data.sso_url ?? '/auth/oidc/login') : null;
  return (
    <main id="main" className="signin">
      <div className="card signin-card">
        <h1 id="signin-title">Sign in to Orrery</h1>
        {ended && (
          <p className="notice" role="status">
            You were signed out: {ended}
          </p>
        )}
        {config.data?.password !== false && <PasswordForm onDone={done} />}
        {sso && (
          <>
            <p className="divider" aria-hidden="true">
              or
            </p>
            {/* A plain link: the server redirects to the identity provider, which comes back to `/`. */}
            <a className="button secondary sso" href={sso} onClick={() => rememberAfterSso(redirect)}>
              Sign in with SSO
            </a>
          </>
        )}
        <div className="key-form">
          <button type="button" className="link" aria-expanded={showKey} onClick={() => setShowKey((v) => !v)}>
            Use an API key instead
          </button>
          {showKey && <KeyForm onDone={done} />}
        </div>
      </div>
    </main>
  );
}

function PasswordForm({ onDone }: { onDone: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  // Called and forgotten by the form: it catches every failure and shows it.
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signInWithPassword(email, password);
      setPassword('');
      await onDone();
    } catch (err) {
      setError(signInError(err));
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="signin-form" onSubmit={(e) => void submit(e)}>
      <label htmlFor="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autoComplete="username"
        required
        maxLength={320}
        value={email}
        onChange={(e) => setEmail(e.target.value)}
      />
      <label htmlFor="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="current-password"
        required
        maxLength={256}
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? 'password-error' : undefined}
      />
      {error && (
        <p id="password-error" className="error-banner" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

function KeyForm({ onDone }: { onDone: () => Promise<void> }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key);
      setKey('');
      await onDone();
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? `That API key was not accepted: ${err.message}`
          : errorMessage(err),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <form id="key-form" className="signin-form" onSubmit={(e) => void submit(e)} aria-label="Sign in with a key">
      <p className="muted small">
        An API key of your project (it starts with <code>sk-</code>). It stays in this tab only.
      </p>
      <label htmlFor="api-key">API key</label>
      <input
        id="api-key"
        name="api-key"
        type="password"
        autoComplete="off"
        spellCheck={false}
        required
        value={key}
        onChange={(e) => setKey(e.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? 'key-error' : undefined}
      />
      {error && (
        <p id="key-error" className="error-banner" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in with the key'}
      </button>
    </form>
  );
}
