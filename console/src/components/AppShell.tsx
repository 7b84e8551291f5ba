/** The frame around every signed-in screen: the navigation, the project, "Sign out", the screen. */
import { useEffect } from 'react';
import { Link, Outlet, useNavigate } from '@tanstack/react-router';
import { onSessionChange, signOut, tokenClaims } from '../api/session.ts';
import { queryClient } from '../api/query.ts';

const NAV = [
  { to: '/runs', label: 'Runs' },
  { to: '/interactions', label: 'Interactions' },
  { to: '/environments', label: 'Environments' },
  { to: '/objects', label: 'Objects' },
  { to: '/keys', label: 'Keys' },
  { to: '/datasets', label: 'Datasets' },
  { to: '/evaluators', label: 'Evaluators' },
] as const;

export function AppShell() {
  const navigate = useNavigate();
  useEffect(
    () =>
      onSessionChange((signedIn) => {
        if (!signedIn) {
          queryClient.clear();
          void navigate({ to: '/signin', search: {} });
        }
      }),
    [navigate],
  );
  const claims = tokenClaims();
  const project = (claims?.project as { name?: string } | undefined)?.name;

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
            {NAV.map((n) => (
              <li key={n.to}>
                <Link to={n.to} activeProps={{ className: 'active', 'aria-current': 'page' }}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="topbar-end">
          {project && (
            <span className="project" title="Project">
              {project}
            </span>
          )}
          <button type="button" className="secondary" onClick={() => signOut()}>
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
