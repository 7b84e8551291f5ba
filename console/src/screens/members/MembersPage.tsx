/**
 * Members (admins): the account's users with their status and role per project, invitations
 * (the link shown to copy, mailed when the server has SMTP), role changes, suspending,
 * reactivating, removing, a password reset link; the pending invitations, revocable.
 *
 * Through the official client where it has the call (account.members, inviteUser, listInvites,
 * rejectInvite, users.update, users.delete); apiFetch for roles and reset links.
 */
import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { apiFetch, client } from '../../api/client.ts';
import { userSession } from '../../api/session.ts';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { RowAction } from '../../components/RowAction.tsx';
import { CopyLink } from './CopyLink.tsx';
import './members.css';

const ROLES = ['developer', 'executor', 'reader', 'auditor'] as const;

interface Member {
  id: string;
  email: string;
  name: string;
  status: 'active' | 'suspended';
  account_admin: boolean;
  projects: Array<{ id: string; name: string; role: string }>;
  last_sign_in_at: string | null;
}

interface Invite {
  id: string;
  data: {
    email: string;
    role: string;
    project?: { id: string; name: string };
    invited_by: { name: string; email: string };
  };
  expires: string;
}

interface InviteResult {
  action: 'invited' | 'added';
  link?: string;
  expires?: string;
  mail?: 'sent' | 'failed' | 'not_configured';
}

interface Project {
  id: string;
  name: string;
}

const dateTime = (iso: string | null | undefined) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';

const MAIL: Record<NonNullable<InviteResult['mail']>, string> = {
  sent: 'It was also mailed to them.',
  failed: 'Mailing it failed (see the server log): send the link yourself.',
  not_configured: 'No mail server is set up: send the link yourself.',
};

export function MembersPage() {
  const qc = useQueryClient();
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => client().account.members() as unknown as Promise<Member[]>,
  });
  const invites = useQuery({
    queryKey: ['invites'],
    queryFn: () => client().account.listInvites() as unknown as Promise<Invite[]>,
  });
  const projects = useQuery({ queryKey: ['projects'], queryFn: () => apiFetch<Project[]>('/projects') });
  const [actionError, setActionError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [reset, setReset] = useState<{ email: string; link: string; expires: string; mail: string } | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const me = userSession()?.user.id;

  const act = async (what: string, fn: () => Promise<unknown>) => {
    setBusy(what);
    setActionError(null);
    try {
      await fn();
      await Promise.all([
        qc.invalidateQueries({ queryKey: ['members'] }),
        qc.invalidateQueries({ queryKey: ['invites'] }),
      ]);
    } catch (err) {
      setActionError(err);
    } finally {
      setBusy(null);
    }
  };

  const resetLink = (m: Member) =>
    act(`reset:${m.id}`, async () => {
      const r = await apiFetch<{ link: string; expires: string; mail: string }>(`/users/${m.id}/password-reset`, {
        method: 'POST',
      });
      setReset({ email: m.email, ...r });
    });

  return (
    <Page title="Members" wide>
      <InviteForm projects={projects.data ?? []} onDone={() => void qc.invalidateQueries({ queryKey: ['invites'] })} />

      <section className="members-section" aria-labelledby="users-title">
        <h2 id="users-title">Users</h2>
        {actionError != null && <ErrorBanner error={actionError} title="That did not work" />}
        {reset && (
          <div className="card link-card" role="region" aria-labelledby="reset-title">
            <h3 id="reset-title">Password reset link for {reset.email}</h3>
            <p>
              It works once, until {dateTime(reset.expires)}, and lifts a lockout.{' '}
              {MAIL[reset.mail as keyof typeof MAIL] ?? ''}
            </p>
            <CopyLink value={reset.link} label="Password reset link" />
            <button type="button" className="secondary" onClick={() => setReset(null)}>
              Done
            </button>
          </div>
        )}
        {removing && (
          <div
            className="card confirm"
            role="alertdialog"
            aria-labelledby="remove-title"
            aria-describedby="remove-text"
          >
            <h3 id="remove-title">Remove {removing.email}?</h3>
            <p id="remove-text">
              Their sessions end at once; their memberships and personal API keys are deleted. What they made stays.
            </p>
            <div className="row-actions">
              <button
                type="button"
                className="danger"
                disabled={busy !== null}
                onClick={() =>
                  void act(`remove:${removing.id}`, async () => {
                    await client().users.delete(removing.id);
                    setRemoving(null);
                  })
                }
              >
                Yes, remove
              </button>
              <button type="button" className="secondary" onClick={() => setRemoving(null)} autoFocus>
                Cancel
              </button>
            </div>
          </div>
        )}
        {members.error ? (
          <ErrorBanner error={members.error} onRetry={() => void members.refetch()} />
        ) : members.isPending ? (
          <Loading />
        ) : (
          <div className="table-scroll" role="region" aria-label="Users (scrollable)" tabIndex={0}>
            <table className="plain-table" aria-label="Users">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Email</th>
                  <th scope="col">Status</th>
                  <th scope="col">Projects and roles</th>
                  <th scope="col">Last sign-in</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {members.data.length === 0 && (
                  <tr>
                    <td colSpan={6} className="muted">
                      No users yet: invite someone above.
                    </td>
                  </tr>
                )}
                {members.data.map((m) => (
                  <tr key={m.id}>
                    <td>
                      {m.name || '—'}
                      {m.id === me && <span className="muted"> (you)</span>}
                    </td>
                    <td className="wrap">{m.email}</td>
                    <td>
                      <span className={m.status === 'suspended' ? 'status-failed' : undefined}>{m.status}</span>
                    </td>
                    <td>
                      {m.account_admin ? (
                        'Account admin (every project)'
                      ) : m.projects.length === 0 ? (
                        <span className="muted">No project</span>
                      ) : (
                        <ul className="memberships">
                          {m.projects.map((p) => (
                            <li key={p.id}>
                              <label>
                                <span className="membership-project">{p.name}</span>
                                <select
                                  aria-label={`Role of ${m.email} in ${p.name}`}
                                  value={p.role}
                                  disabled={busy !== null}
                                  onChange={(e) =>
                                    void act(`role:${m.id}`, () =>
                                      apiFetch(`/users/${m.id}/projects/${p.id}`, {
                                        method: 'PUT',
                                        body: { role: e.target.value },
                                      }),
                                    )
                                  }
                                >
                                  {ROLES.map((r) => (
                                    <option key={r} value={r}>
                                      {r}
                                    </option>
                                  ))}
                                </select>
                              </label>
                              <RowAction
                                label="Take out"
                                name={`Take out ${m.email} from ${p.name}`}
                                look="link"
                                disabled={busy !== null}
                                onClick={() =>
                                  void act(`out:${m.id}`, () =>
                                    apiFetch(`/users/${m.id}/projects/${p.id}`, { method: 'DELETE' }),
                                  )
                                }
                              />
                            </li>
                          ))}
                        </ul>
                      )}
                    </td>
                    <td>{dateTime(m.last_sign_in_at)}</td>
                    <td>
                      <div className="row-actions">
                        {m.id !== me && (
                          <RowAction
                            label={m.status === 'active' ? 'Suspend' : 'Reactivate'}
                            name={`${m.status === 'active' ? 'Suspend' : 'Reactivate'} ${m.email}`}
                            disabled={busy !== null}
                            onClick={() =>
                              void act(`status:${m.id}`, () =>
                                client().users.update(m.id, {
                                  status: m.status === 'active' ? 'suspended' : 'active',
                                } as never),
                              )
                            }
                          />
                        )}
                        <RowAction
                          label="Reset link"
                          name={`Password reset link for ${m.email}`}
                          disabled={busy !== null}
                          onClick={() => void resetLink(m)}
                        />
                        {m.id !== me && (
                          <RowAction
                            label="Remove"
                            name={`Remove ${m.email}`}
                            look="danger"
                            disabled={busy !== null}
                            onClick={() => setRemoving(m)}
                          />
                        )}
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="members-section" aria-labelledby="invites-title">
        <h2 id="invites-title">Pending invitations</h2>
        {invites.error ? (
          <ErrorBanner error={invites.error} onRetry={() => void invites.refetch()} />
        ) : invites.isPending ? (
          <Loading />
        ) : invites.data.length === 0 ? (
          <p className="muted">No pending invitations.</p>
        ) : (
          <div className="table-scroll" role="region" aria-label="Pending invitations (scrollable)" tabIndex={0}>
            <table className="plain-table" aria-label="Pending invitations">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Project</th>
                  <th scope="col">Invited by</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {invites.data.map((i) => (
                  <tr key={i.id}>
                    <td className="wrap">{i.data.email}</td>
                    <td>{i.data.role === 'admin' ? 'admin (every project)' : i.data.role}</td>
                    <td>{i.data.project?.name ?? '—'}</td>
                    <td>{i.data.invited_by.name || i.data.invited_by.email}</td>
                    <td>{dateTime(i.expires)}</td>
                    <td>
                      <button
                        type="button"
                        className="link danger-link"
                        aria-label={`Revoke the invitation of ${i.data.email}`}
                        disabled={busy !== null}
                        onClick={() => void act(`revoke:${i.id}`, () => client().account.rejectInvite(i.id))}
                      >
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </Page>
  );
}

function InviteForm({ projects, onDone }: { projects: Project[]; onDone: () => void }) {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<string>('developer');
  const [project, setProject] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<(InviteResult & { email: string }) | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const r = (await client().account.inviteUser({
        email: email.trim(),
        role,
        ...(project && role !== 'admin' ? { project } : {}),
      } as never)) as unknown as InviteResult;
      setResult({ ...r, email: email.trim() });
      setEmail('');
      onDone();
      if (r.action === 'added') await qc.invalidateQueries({ queryKey: ['members'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="invite-title">
      <h2 id="invite-title">Invite someone</h2>
      <form className="invite-form" onSubmit={(e) => void submit(e)}>
        <div className="field">
          <label htmlFor="invite-email">Email</label>
          <input
            id="invite-email"
            type="email"
            required
            maxLength={320}
            value={email}
            onChange={(e) => setEmail(e.target.value)}
            placeholder="lin@example.com"
          />
        </div>
        <div className="field">
          <label htmlFor="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
            <option value="admin">admin (account admin, every project)</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="invite-project">Project</label>
          <select
            id="invite-project"
            value={project}
            disabled={role === 'admin'}
            onChange={(e) => setProject(e.target.value)}
          >
            <option value="">This project</option>
            {projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={busy || !email.trim()}>
          {busy ? 'Inviting…' : 'Invite'}
        </button>
      </form>
      <p className="muted small">
        Someone who already has a login gets the role at once. An invitation works once and expires.
      </p>
      {error != null && <ErrorBanner error={error} title="Not invited" />}
      {result && (
        <div className="link-card" role="region" aria-labelledby="invited-title">
          {result.action === 'added' ? (
            <p id="invited-title" role="status">
              {result.email} already had a login: the role is theirs now.
            </p>
          ) : (
            <>
              <h3 id="invited-title">Invitation for {result.email}</h3>
              <p role="status">
                Send them this link: it works once, until {dateTime(result.expires)}.{' '}
                {result.mail ? MAIL[result.mail] : ''}
              </p>
              <CopyLink value={result.link ?? ''} label="Invitation link" />
            </>
          )}
        </div>
      )}
    </section>
  );
}
