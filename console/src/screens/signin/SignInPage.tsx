/** Sign-in: one field, "API key", exchanged for a JWT (api/session.ts). */
import { useState, type FormEvent } from 'react';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { signIn } from '../../api/session.ts';
import { ApiError, errorMessage } from '../../api/errors.ts';
import { sameOriginRedirect } from './redirect.ts';

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
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  // Called and forgotten by the form: it catches every failure and shows it.
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key);
      setKey('');
      // Checked again where it is used: whatever reached the search, only this origin's paths go.
      const to = sameOriginRedirect(redirect, window.location.origin);
      if (to) await navigate({ href: to });
      else await navigate({ to: '/runs' });
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
    <main id="main" className="signin">
      <form className="card signin-card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to Orrery</h1>
        <p className="muted">
          Use an API key of your project (it starts with <code>sk-</code>). It stays in this tab only.
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
          aria-describedby={error ? 'signin-error' : undefined}
        />
        {error && (
          <p id="signin-error" className="error-banner" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
