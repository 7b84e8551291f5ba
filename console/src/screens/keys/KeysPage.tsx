/**
 * Project and API keys: the current project (and, for admin keys, switching to another), the
 * project's embeddings settings (read-only), the account's keys; create a key (its secret shown
 * once, with a copy button) and revoke one.
 *
 * Switching project (admin keys): the JWT is issued again for the chosen project
 * (`POST /token/issue {project}`); the key stays the one signed in with.
 */
import { useMemo, useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { apiFetch, client } from '../../api/client.ts';
import { errorMessage } from '../../api/errors.ts';
import { switchProject, tokenClaims } from '../../api/session.ts';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper, type DataColumn } from '../../components/DataTable.tsx';
import { useNarrow } from '../objects/format.tsx';
import './keys.css';

const ROLES = ['developer', 'executor', 'reader', 'auditor', 'admin'] as const;

interface ApiKeyRow {
  id: string;
  name: string;
  role: string;
  project: { id: string; name: string };
  hint: string;
  expires_at: string | null;
  enabled: boolean;
  created_at: string;
  created_by: string;
}

interface ProjectRow {
  id: string;
  name: string;
  namespace?: string;
  settings?: Record<string, unknown>;
}

interface EmbeddingStatus {
  status?: string;
  enabled?: boolean;
  totalIndexableObjects?: number;
  objectsWithEmbeddings?: number;
  model?: string;
  dimensions?: number;
  environment?: string | null;
  runs?: boolean;
  vectorIndex?: { status?: string };
}

const date = (iso?: string | null) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) : '—');

function Copy({ value, label }: { value: string; label: string }) {
  const [done, setDone] = useState<'copied' | 'failed' | null>(null);
  return (
    <>
      <button
        type="button"
        aria-label={label}
        onClick={() => {
          navigator.clipboard
            ?.writeText(value)
            .then(() => setDone('copied'))
            .catch(() => setDone('failed'));
        }}
      >
        Copy
      </button>
      <span role="status" className="muted">
        {done === 'copied'
          ? 'Copied.'
          : done === 'failed'
            ? 'Copying failed: select the secret and copy it by hand.'
            : ''}
      </span>
    </>
  );
}

function ProjectSection() {
  const claims = tokenClaims();
  const current = claims?.project as { id: string; name: string } | undefined;
  const role = claims?.role as string | undefined;
  const isAdmin = role === 'admin';
  const projects = useQuery({ queryKey: ['projects'], queryFn: () => apiFetch<ProjectRow[]>('/projects') });
  const project = useQuery({
    queryKey: ['projects', current?.id],
    enabled: !!current,
    queryFn: () => apiFetch<ProjectRow>(`/projects/${current!.id}`),
  });
  const embeddings = useQuery({
    queryKey: ['embeddings', 'status', current?.id],
    queryFn: async () => {
      const types = ['text', 'image', 'properties'] as const;
      const all = await Promise.all(
        types.map((t) =>
          apiFetch<EmbeddingStatus>(`/embeddings/${t}/status`).then(
            (s) => [t, s] as const,
            (e: unknown) => [t, { status: `unavailable: ${errorMessage(e)}` }] as const,
          ),
        ),
      );
      return all;
    },
  });
  const [target, setTarget] = useState('');
  const [switching, setSwitching] = useState(false);
  const [switchError, setSwitchError] = useState<unknown>(null);

  const switchTo = async (e: FormEvent) => {
    e.preventDefault();
    const to = projects.data?.find((p) => p.id === target);
    if (!to || to.id === current?.id) return;
    setSwitching(true);
    setSwitchError(null);
    try {
      await switchProject(to.id);
      window.location.reload();
    } catch (err) {
      setSwitchError(err);
      setSwitching(false);
    }
  };

  const settings = (project.data?.settings?.embeddings ?? null) as Record<string, unknown> | null;
  const text = embeddings.data?.find(([t]) => t === 'text')?.[1] as EmbeddingStatus | undefined;
  return (
    <section className="card" aria-labelledby="project-title">
      <h2 id="project-title">Project</h2>
      <dl className="facts">
        <dt>Current project</dt>
        <dd data-testid="current-project">
          {current?.name ?? '—'} <span className="muted mono">{current?.id}</span>
        </dd>
        <dt>This key's role</dt>
        <dd>{role ?? '—'}</dd>
        {project.data?.namespace && (
          <>
            <dt>Namespace</dt>
            <dd className="mono">{project.data.namespace}</dd>
          </>
        )}
      </dl>
      {isAdmin ? (
        <form className="inline-form" onSubmit={(e) => void switchTo(e)}>
          <label htmlFor="project-switch">Switch to project</label>
          <select
            id="project-switch"
            value={target}
            onChange={(e) => setTarget(e.target.value)}
            disabled={!projects.data || switching}
          >
            <option value="">Choose a project…</option>
            {projects.data?.map((p) => (
              <option key={p.id} value={p.id} disabled={p.id === current?.id}>
                {p.name}
                {p.id === current?.id ? ' (current)' : ''}
              </option>
            ))}
          </select>
          <button type="submit" disabled={!target || target === current?.id || switching}>
            {switching ? 'Switching…' : 'Switch'}
          </button>
        </form>
      ) : (
        <p className="muted">Only admin keys can switch project.</p>
      )}
      {isAdmin && (
        <p className="muted small">
          Switching signs this tab in with a new admin key of that project, valid for 12 hours.
        </p>
      )}
      {switchError != null && <ErrorBanner error={switchError} title="Switching failed" />}
      {projects.error != null && <ErrorBanner error={projects.error} title="Projects unavailable" />}

      <h3>Embeddings</h3>
      {embeddings.isPending ? (
        <Loading />
      ) : (
        <dl className="facts" aria-label="Embeddings settings">
          <dt>Embedder</dt>
          <dd>
            {text?.environment
              ? `environment ${text.environment}`
              : settings?.environment
                ? `environment ${String(settings.environment)}`
                : 'built-in'}
          </dd>
          <dt>Model</dt>
          <dd className="mono">
            {text?.model ?? (settings?.model != null ? String(settings.model) : '—')}
            {typeof text?.dimensions === 'number' && <span className="muted"> ({text.dimensions} dimensions)</span>}
          </dd>
          <dt>Run embeddings</dt>
          <dd>{(text?.runs ?? settings?.runs) === false ? 'off' : 'on'}</dd>
          {embeddings.data?.map(([type, s]) => (
            <EmbeddingRow key={type} type={type} status={s as EmbeddingStatus} />
          ))}
        </dl>
      )}
    </section>
  );
}

function EmbeddingRow({ type, status }: { type: string; status: EmbeddingStatus }) {
  const parts = [
    status.status,
    typeof status.objectsWithEmbeddings === 'number'
      ? `${status.objectsWithEmbeddings} of ${status.totalIndexableObjects ?? '?'} objects embedded`
      : undefined,
    status.vectorIndex?.status ? `index ${status.vectorIndex.status.toLowerCase()}` : undefined,
  ].filter(Boolean);
  return (
    <>
      <dt>{type[0].toUpperCase() + type.slice(1)} vectors</dt>
      <dd>{parts.join(' · ') || '—'}</dd>
    </>
  );
}

export function KeysPage() {
  const qc = useQueryClient();
  const keys = useQuery({
    queryKey: ['apikeys'],
    queryFn: () => client().apikeys.list() as unknown as Promise<ApiKeyRow[]>,
  });
  const [name, setName] = useState('');
  const [role, setRole] = useState<string>('developer');
  const [creating, setCreating] = useState(false);
  const [createError, setCreateError] = useState<unknown>(null);
  const [secret, setSecret] = useState<{ name: string; value: string } | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyRow | null>(null);
  const [revokeError, setRevokeError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const myKey = tokenClaims()?.key_id as string | undefined;
  const narrow = useNarrow();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return;
    setCreating(true);
    setCreateError(null);
    try {
      const key = (await client().apikeys.create({ name: name.trim(), role } as never)) as unknown as ApiKeyRow & {
        value: string;
      };
      setSecret({ name: key.name, value: key.value });
      setName('');
      await qc.invalidateQueries({ queryKey: ['apikeys'] });
    } catch (err) {
      setCreateError(err);
    } finally {
      setCreating(false);
    }
  };

  const revoke = async () => {
    if (!revoking) return;
    setBusy(true);
    setRevokeError(null);
    try {
      await client().apikeys.delete(revoking.id);
      setRevoking(null);
      await qc.invalidateQueries({ queryKey: ['apikeys'] });
    } catch (err) {
      setRevokeError(err);
    } finally {
      setBusy(false);
    }
  };

  const columns = useMemo(() => {
    const col = columnHelper<ApiKeyRow>();
    return [
      col.accessor('name', {
        header: 'Name',
        cell: (c) => (
          <span className="key-name">
            {c.getValue() as string}
            {(c.row.original as ApiKeyRow).id === myKey && <span className="muted"> (this session)</span>}
            {(c.row.original as ApiKeyRow).enabled === false && <span className="status-failed"> (disabled)</span>}
          </span>
        ),
      }),
      col.accessor('role', { header: 'Role' }),
      col.display({
        id: 'project',
        header: 'Project',
        cell: (c) => (c.row.original as ApiKeyRow).project?.name ?? '—',
      }),
      col.accessor('hint', { header: 'Key', cell: (c) => <span className="mono">{c.getValue() as string}</span> }),
      col.accessor('created_at', { header: 'Created', cell: (c) => date(c.getValue() as string) }),
      col.accessor('expires_at', { header: 'Expires', cell: (c) => date(c.getValue() as string | null) }),
      col.display({
        id: 'actions',
        header: () => <span className="visually-hidden">Actions</span>,
        cell: (c) => {
          const k = c.row.original as ApiKeyRow;
          return (
            <button
              type="button"
              className="link danger-link"
              aria-label={`Revoke ${k.name}`}
              onClick={() => {
                setRevokeError(null);
                setRevoking(k);
              }}
            >
              Revoke
            </button>
          );
        },
      }),
    ] as DataColumn<ApiKeyRow>[];
  }, [myKey]);

  return (
    <Page title="Project and keys" wide>
      <div className="keys-layout">
        <ProjectSection />

        <section className="card" aria-labelledby="create-title">
          <h2 id="create-title">Create an API key</h2>
          <form className="create-key" onSubmit={(e) => void create(e)}>
            <div className="field">
              <label htmlFor="key-name">Key name</label>
              <input
                id="key-name"
                value={name}
                onChange={(e) => setName(e.target.value)}
                required
                maxLength={200}
                placeholder="CI pipeline"
              />
            </div>
            <div className="field">
              <label htmlFor="key-role">Role</label>
              <select id="key-role" value={role} onChange={(e) => setRole(e.target.value)}>
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" disabled={creating || !name.trim()}>
              {creating ? 'Creating…' : 'Create key'}
            </button>
          </form>
          {createError != null && <ErrorBanner error={createError} title="The key was not created" />}
          {secret && (
            <div className="secret card" role="region" aria-labelledby="secret-title">
              <h3 id="secret-title">Key “{secret.name}” created</h3>
              <p>Copy its secret now: it is shown only once and cannot be retrieved later.</p>
              <div className="secret-row">
                <code className="secret-value" data-testid="new-key-secret" aria-label="New key secret">
                  {secret.value}
                </code>
                <Copy value={secret.value} label="Copy the new key's secret" />
              </div>
              <button type="button" className="secondary" onClick={() => setSecret(null)}>
                Done
              </button>
            </div>
          )}
        </section>
      </div>

      <section aria-labelledby="keys-title" className="keys-list">
        <h2 id="keys-title">API keys</h2>
        {revoking && (
          <div
            className="card confirm"
            role="alertdialog"
            aria-labelledby="revoke-title"
            aria-describedby="revoke-text"
          >
            <h3 id="revoke-title">Revoke {revoking.name}?</h3>
            <p id="revoke-text">
              Anything using this key ({revoking.hint}) is refused from now on.
              {revoking.id === myKey ? ' This is the key of this session: you will be signed out.' : ''}
            </p>
            <div className="row-actions">
              <button type="button" className="danger" onClick={() => void revoke()} disabled={busy}>
                {busy ? 'Revoking…' : 'Yes, revoke'}
              </button>
              <button type="button" className="secondary" onClick={() => setRevoking(null)} disabled={busy} autoFocus>
                Cancel
              </button>
            </div>
            {revokeError != null && <ErrorBanner error={revokeError} title="Revoking failed" />}
          </div>
        )}
        {keys.error ? (
          <ErrorBanner error={keys.error} onRetry={() => void keys.refetch()} />
        ) : keys.isPending ? (
          <Loading />
        ) : (
          <DataTable
            label="API keys"
            data={keys.data}
            columns={columns}
            getRowId={(k) => k.id}
            columnVisibility={narrow ? { project: false, created_at: false, expires_at: false } : undefined}
            height="min(50vh, 600px)"
            empty="No keys."
          />
        )}
      </section>
    </Page>
  );
}
