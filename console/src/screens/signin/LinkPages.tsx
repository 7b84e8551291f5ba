/**
 * The pages of the links the API hands out (`/accept-invite#token=…`, `/reset-password#token=…`):
 * the secret rides in the fragment, which the browser never sends to any server. Both end signed
 * in, on the runs page.
 */
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { adoptSession, authPost, type UserSession } from '../../api/session.ts';
import { signInError } from './messages.ts';
import { useAuthConfig } from './auth-config.ts';

/** The server's bounds (docs/guides/users-and-sso.md): checked here too, to say so before sending. */
const PASSWORD_MIN = 12;
const PASSWORD_MAX = 256;

const tokenOfHash = (): string => new URLSearchParams(window.location.hash.replace(/^#/, '')).get('token') ?? '';

interface InviteInfo {
  email: string;
  role: string;
  project: string | null;
  project_name: string | null;
  expires: string;
}

const dateTime = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

function LinkFrame({ title, children }: { title: string; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Orrery`;
  }, [title]);
  return (
    <main id="main" className="signin">
      <div className="card signin-card">
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

function BadLink({ error }: { error: string }) {
  return (
    <>
      <p className="error-banner" role="alert">
        {error}
      </p>
      <p>
        <Link to="/signin" search={{}}>
          Go to sign-in
        </Link>
      </p>
    </>
  );
}

/** The new password twice, with the bounds said up front; `onSubmit` gets it once both agree. */
function NewPassword({
  submitLabel,
  busy,
  error,
  onSubmit,
  children,
}: {
  submitLabel: string;
  busy: boolean;
  error: string | null;
  onSubmit: (password: string) => void;
  children?: ReactNode;
}) {
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [local, setLocal] = useState<string | null>(null);
  const shown = local ?? error;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX)
      return setLocal(`The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`);
    if (password !== again) return setLocal('The two passwords differ.');
    setLocal(null);
    onSubmit(password);
  };
  return (
    <form className="signin-form" onSubmit={submit} aria-label={submitLabel}>
      {children}
      <label htmlFor="new-password">Password</label>
      <input
        id="new-password"
        type="password"
        autoComplete="new-password"
        required
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        aria-describedby="password-hint"
      />
      <p id="password-hint" className="muted small">
        {PASSWORD_MIN} to {PASSWORD_MAX} characters.
      </p>
      <label htmlFor="password-again">Repeat the password</label>
      <input
        id="password-again"
        type="password"
        autoComplete="new-password"
        required
        value={again}
        onChange={(e) => setAgain(e.target.value)}
      />
      {shown && (
        <p className="error-banner" role="alert">
          {shown}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? 'One moment…' : submitLabel}
      </button>
    </form>
  );
}

export function AcceptInvitePage() {
  const navigate = useNavigate();
  const [token] = useState(tokenOfHash);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const info = useQuery({
    queryKey: ['invite', token],
    enabled: !!token,
    retry: false,
    queryFn: () => authPost<InviteInfo>('/auth/invites/describe', { token }),
  });
  const config = useAuthConfig();

  const accept = async (password: string) => {
    setBusy(true);
    setError(null);
    try {
      await adoptSession(await authPost<UserSession>('/auth/invites/accept', { token, name: name.trim(), password }));
      await navigate({ to: '/runs' });
    } catch (err) {
      setError(signInError(err));
      setBusy(false);
    }
  };

  if (!token)
    return (
      <LinkFrame title="Accept the invitation">
        <BadLink error="This page needs the whole invitation link (it ends with #token=…): open it again from the message you got." />
      </LinkFrame>
    );
  return (
    <LinkFrame title="Accept the invitation">
      {info.isPending ? (
        <p role="status">Reading the invitation…</p>
      ) : info.error ? (
        <BadLink error={`${signInError(info.error)}`} />
      ) : (
        <>
          <p>
            You are invited as <strong>{info.data.email}</strong>, with the role <strong>{info.data.role}</strong>
            {info.data.project ? (
              <>
                {' '}
                in <strong>{info.data.project_name ?? info.data.project}</strong>
              </>
            ) : (
              ' in every project (account admin)'
            )}
            . The invitation expires {dateTime(info.data.expires)}.
          </p>
          <NewPassword submitLabel="Accept invitation" busy={busy} error={error} onSubmit={(p) => void accept(p)}>
            <label htmlFor="name">Your name</label>
            <input
              id="name"
              autoComplete="name"
              required
              maxLength={200}
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          </NewPassword>
          {config.data?.sso && (
            <>
              <p className="divider" aria-hidden="true">
                or
              </p>
              <a className="button secondary sso" href={config.data.sso_url ?? '/auth/oidc/login'}>
                Continue with SSO
              </a>
              <p className="muted small">Sign in at your identity provider as {info.data.email}: that accepts it.</p>
            </>
          )}
        </>
      )}
    </LinkFrame>
  );
}

export function ResetPasswordPage() {
  const navigate = useNavigate();
  const [token] = useState(tokenOfHash);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const reset = async (password: string) => {
    setBusy(true);
    setError(null);
    try {
      await adoptSession(await authPost<UserSession>('/auth/password-reset', { token, password }));
      await navigate({ to: '/runs' });
    } catch (err) {
      setError(signInError(err));
      setBusy(false);
    }
  };
  return (
    <LinkFrame title="Choose a new password">
      {token ? (
        <NewPassword submitLabel="Set password" busy={busy} error={error} onSubmit={(p) => void reset(p)}>
          <p className="muted">This link works once. Your other sessions end when the new password is set.</p>
        </NewPassword>
      ) : (
        <BadLink error="This page needs the whole reset link (it ends with #token=…): open it again from the message you got." />
      )}
    </LinkFrame>
  );
}
