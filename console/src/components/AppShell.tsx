/**
 * The frame around every signed-in screen: the navigation, who is signed in (a user with their
 * project and role, and a switcher among their projects; or the API key's project), "Sign out",
 * the screen.
 */
import { useEffect, useState } from 'react';
import { Link, Outlet, useNavigate } from '@tanstack/react-router';
import { currentProject, onSessionChange, signOut, switchProject, userSession } from '../api/session.ts';
import { queryClient } from '../api/query.ts';
import { errorMessage } from '../api/errors.ts';

const NAV = [
  { to: '/runs', label: 'Runs' },
  { to: '/interactions', label: 'Interactions' },
  { to: '/environments', label: 'Environments' },
  { to: '/objects', label: 'Objects' },
  { to: '/keys', label: 'Keys' },
  { to: '/datasets', label: 'Datasets' },
  { to: '/evaluators', label: 'Evaluators' },
  { to: '/experiments', label: 'Experiments' },
  { to: '/members', label: 'Members', admins: true },
] as const;

export function AppShell() {
  const navigate = useNavigate();
  const [, rerender] = useState(0);
  useEffect(
    () =>
      onSessionChange((signedIn) => {
        if (!signedIn) {
          queryClient.clear();
          void navigate({ to: '/signin', search: { redirect: window.location.pathname + window.location.search } });
        } else rerender((n) => n + 1);
      }),
    [navigate],
  );
  const session = userSession();
  const project = currentProject();
  const isAdmin = project?.role === 'admin' || !!session?.user.account_admin;

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/runs" className="brand" aria-label="Orrery home">
          Orrery
        </Link>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((n) => !('admins' in n) || isAdmin).map((n) => (
              <li key={n.to}>
                <Link to={n.to} activeProps={{ className: 'active', 'aria-current': 'page' }}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="topbar-end">
          {session ? (
            <UserBox />
          ) : (
            project && (
              <span className="project" title="Project (API key)">
                {project.name}
              </span>
            )
          )}
          <button type="button" className="secondary" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" className="main">
        <Outlet />
      </main>
    </div>
  );
}

/** The signed-in user: name and email, their role here, the projects they may switch to. */
function UserBox() {
  const session = userSession()!;
  const project = currentProject();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const change = async (id: string) => {
    setBusy(true);
    setError(null);
    try {
      await switchProject(id);
      // Every cached answer was of the previous project.
      queryClient.clear();
      window.location.reload();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <div className="user-box">
      <span className="user">
        <span className="visually-hidden">Signed in as </span>
        <span className="user-name">{session.user.name || session.user.email}</span>
        {session.user.name && <span className="muted user-email">{session.user.email}</span>}
      </span>
      {session.projects.length > 1 ? (
        <label className="project-switch">
          <span className="visually-hidden">Project</span>
          <select value={project?.id ?? ''} disabled={busy} onChange={(e) => void change(e.target.value)}>
            {session.projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name} · {p.role}
              </option>
            ))}
          </select>
        </label>
      ) : (
        project && (
          <span className="project" title="Project and role">
            {project.name} · {project.role}
          </span>
        )
      )}
      {error && (
        <span className="error-banner small" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
