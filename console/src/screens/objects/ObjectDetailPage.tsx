/**
 * One object: status and processing error, metadata, properties, extracted text (capped),
 * renditions (image previews), token count, similar objects, download and delete.
 */
import { useState } from 'react';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { apiFetch, client } from '../../api/client.ts';
import { errorMessage, errorStatus } from '../../api/errors.ts';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { CappedJson, CappedText } from '../../components/CappedText.tsx';
import { formatBytes, formatDate, StatusBadge } from './format.tsx';
import type { ObjectRow } from './ObjectsPage.tsx';
import './objects.css';

const route = getRouteApi('/_app/objects/$objectId');

/** Extracted text shown before "Show all". */
const TEXT_CAP = 20_000;

interface ObjectRecord extends ObjectRow {
  description?: string | null;
  tags?: string[];
  properties?: Record<string, unknown>;
  metadata?: (ObjectRow['metadata'] & Record<string, unknown>) | null;
  tokens?: { count?: number; encoding?: string } | null;
  error?: { code: string; message: string; step: string };
  created_at?: string;
  created_by?: string;
  updated_by?: string;
  parent?: string | { id: string; name: string };
  external_id?: string | null;
  score?: number;
}

const pending = (status?: string) => status === 'created' || status === 'processing';

function Renditions({ objectId, etag }: { objectId: string; etag?: string }) {
  const renditions = useQuery({
    queryKey: ['objects', objectId, 'renditions', etag],
    queryFn: async () => {
      const list = (await client().objects.listRenditions(objectId)) as unknown as ObjectRecord[];
      return Promise.all(
        list.map(async (r) => {
          const source = r.content?.source;
          const url = source ? (await client().objects.getDownloadUrl(source, r.name, 'inline')).url : undefined;
          return { ...r, url };
        }),
      );
    },
  });
  if (renditions.isPending) return <Loading />;
  if (renditions.error) return <ErrorBanner error={renditions.error} onRetry={() => void renditions.refetch()} />;
  if (!renditions.data.length) return <p className="muted">No renditions.</p>;
  return (
    <ul className="renditions">
      {renditions.data.map((r) => {
        const dims = (r.metadata as { dimensions?: { width?: number; height?: number } } | null)?.dimensions;
        return (
          <li key={r.id} className="rendition">
            {r.url && <img src={r.url} alt={`Rendition ${r.name}`} loading="lazy" />}
            <span>
              {r.name}
              {dims && (
                <span className="muted">
                  {' '}
                  · {dims.width}×{dims.height}
                </span>
              )}
              <span className="muted"> · {formatBytes(r.metadata?.size)}</span>
            </span>
          </li>
        );
      })}
    </ul>
  );
}

function SimilarObjects({ objectId, ready }: { objectId: string; ready: boolean }) {
  const similar = useQuery({
    queryKey: ['objects', objectId, 'similar', ready],
    queryFn: () =>
      apiFetch<ObjectRow[] & { score?: number }[]>('/objects', { query: { similarTo: objectId, limit: 10 } }),
    retry: false,
  });
  if (similar.isPending) return <Loading />;
  if (similar.error) {
    // No vector yet, embeddings off, or similarity not enabled: a fact, not a failure of the page.
    const s = errorStatus(similar.error);
    return (
      <p className="muted">
        {s && s < 500 ? `No similar objects: ${errorMessage(similar.error)}` : errorMessage(similar.error)}
      </p>
    );
  }
  if (!similar.data.length) return <p className="muted">No similar objects found.</p>;
  return (
    <ol className="similar">
      {(similar.data as Array<ObjectRow & { score?: number }>).map((o) => (
        <li key={o.id}>
          <Link to="/objects/$objectId" params={{ objectId: o.id }}>
            {o.name || o.id}
          </Link>
          {typeof o.score === 'number' && <span className="muted"> · similarity {o.score.toFixed(3)}</span>}
        </li>
      ))}
    </ol>
  );
}

function DownloadLink({ objectId, name, etag }: { objectId: string; name?: string; etag?: string }) {
  const url = useQuery({
    queryKey: ['objects', objectId, 'download', etag],
    queryFn: async () => {
      const src = await client().objects.getContentSource(objectId);
      if (!src.source) return null;
      return (await client().objects.getDownloadUrl(src.source, name ?? src.name, 'attachment')).url;
    },
    staleTime: 30 * 60_000,
  });
  if (url.error) return <span className="muted">Download unavailable: {errorMessage(url.error)}</span>;
  if (!url.data) return null;
  return (
    <a className="button secondary" href={url.data} download={name ?? true}>
      Download
    </a>
  );
}

export function ObjectDetailPage() {
  const { objectId } = route.useParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const [deleteError, setDeleteError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState(false);

  const obj = useQuery({
    queryKey: ['objects', objectId, 'record'],
    queryFn: () => client().objects.retrieve(objectId) as unknown as Promise<ObjectRecord>,
    refetchInterval: (q) => (pending(q.state.data?.status) ? 1000 : false),
  });
  const status = obj.data?.status;
  const etag = (obj.data?.content as { etag?: string } | null | undefined)?.etag;
  const text = useQuery({
    queryKey: ['objects', objectId, 'text', status, etag],
    enabled: !!obj.data && !pending(status),
    queryFn: () => client().objects.getObjectText(objectId),
  });

  if (obj.error) {
    return (
      <Page title="Object">
        <ErrorBanner error={obj.error} onRetry={() => void obj.refetch()} />
        <p>
          <Link to="/objects">Back to objects</Link>
        </p>
      </Page>
    );
  }
  if (obj.isPending) {
    return (
      <Page title="Object">
        <Loading />
      </Page>
    );
  }
  const o = obj.data;
  const name = o.name || o.id;
  const isPending = pending(o.status);

  const remove = async () => {
    setDeleting(true);
    setDeleteError(null);
    try {
      await client().objects.delete(objectId);
      await qc.invalidateQueries({ queryKey: ['objects'] });
      void navigate({ to: '/objects', search: o.location ? { location: o.location } : {} });
    } catch (err) {
      setDeleteError(err);
      setDeleting(false);
    }
  };

  return (
    <Page
      title={name}
      wide
      actions={
        <>
          <DownloadLink objectId={objectId} name={o.content?.name ?? o.name} etag={etag} />
          <button type="button" className="danger" onClick={() => setConfirming(true)} disabled={confirming}>
            Delete
          </button>
        </>
      }
    >
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <ol>
          <li>
            <Link to="/objects" search={{}}>
              All objects
            </Link>
          </li>
          {o.location && (
            <li>
              <Link to="/objects" search={{ location: o.location }}>
                {o.location === '/' ? 'Top level' : o.location}
              </Link>
            </li>
          )}
          <li>
            <span aria-current="page">{name}</span>
          </li>
        </ol>
      </nav>

      {confirming && (
        <div
          className="card confirm"
          role="alertdialog"
          aria-labelledby="confirm-delete-title"
          aria-describedby="confirm-delete-text"
        >
          <h2 id="confirm-delete-title">Delete {name}?</h2>
          <p id="confirm-delete-text">
            The object, its renditions and (when no other object uses it) its file are deleted. This cannot be undone.
          </p>
          <div className="row-actions">
            <button type="button" className="danger" onClick={() => void remove()} disabled={deleting}>
              {deleting ? 'Deleting…' : 'Yes, delete'}
            </button>
            <button
              type="button"
              className="secondary"
              onClick={() => setConfirming(false)}
              disabled={deleting}
              autoFocus
            >
              Cancel
            </button>
          </div>
          {deleteError != null && <ErrorBanner error={deleteError} title="Delete failed" />}
        </div>
      )}

      {o.status === 'failed' && o.error && (
        <div className="error-banner" role="alert">
          <strong>Processing failed</strong> at step {o.error.step} ({o.error.code}): {o.error.message}
        </div>
      )}

      <div className="detail-grid">
        <section className="card" aria-labelledby="summary-title">
          <h2 id="summary-title">Summary</h2>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={o.status} />{' '}
              {isPending && <span className="muted">(processing; updates by itself)</span>}
            </dd>
            <dt>Type</dt>
            <dd>{o.type?.name ?? o.metadata?.mime_type ?? o.content?.type ?? '—'}</dd>
            <dt>Size</dt>
            <dd>{formatBytes(o.metadata?.size)}</dd>
            <dt>Tokens</dt>
            <dd data-testid="token-count">
              {typeof o.tokens?.count === 'number' ? (
                <>
                  {o.tokens.count.toLocaleString()}
                  {o.tokens.encoding && <span className="muted"> ({o.tokens.encoding})</span>}
                </>
              ) : (
                '—'
              )}
            </dd>
            <dt>Folder</dt>
            <dd>
              {o.location ? (
                <Link to="/objects" search={{ location: o.location }}>
                  {o.location === '/' ? 'Top level (/)' : o.location}
                </Link>
              ) : (
                '—'
              )}
            </dd>
            <dt>Created</dt>
            <dd>{formatDate(o.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{formatDate(o.updated_at)}</dd>
            <dt>Id</dt>
            <dd className="mono">{o.id}</dd>
            {o.tags && o.tags.length > 0 && (
              <>
                <dt>Tags</dt>
                <dd>{o.tags.join(', ')}</dd>
              </>
            )}
            {o.description && (
              <>
                <dt>Description</dt>
                <dd>{o.description}</dd>
              </>
            )}
          </dl>
        </section>

        <section className="card" aria-labelledby="renditions-title">
          <h2 id="renditions-title">Renditions</h2>
          {isPending ? (
            <p className="muted">Waiting for processing…</p>
          ) : (
            <Renditions objectId={objectId} etag={etag} />
          )}
        </section>

        <section className="card" aria-labelledby="similar-title">
          <h2 id="similar-title">Similar objects</h2>
          {isPending ? (
            <p className="muted">Waiting for processing…</p>
          ) : (
            <SimilarObjects objectId={objectId} ready={!isPending} />
          )}
        </section>
      </div>

      <section className="card" aria-labelledby="text-title">
        <h2 id="text-title">Extracted text</h2>
        {isPending ? (
          <p className="muted">Waiting for processing…</p>
        ) : text.error ? (
          <ErrorBanner error={text.error} onRetry={() => void text.refetch()} />
        ) : text.isPending ? (
          <Loading />
        ) : text.data?.text ? (
          <CappedText text={text.data.text} limit={TEXT_CAP} filename={`${name}.txt`} label="Extracted text" />
        ) : (
          <p className="muted">No text.</p>
        )}
      </section>

      <div className="detail-grid two">
        <section className="card" aria-labelledby="metadata-title">
          <h2 id="metadata-title">Metadata</h2>
          <CappedJson value={o.metadata ?? {}} filename={`${name}.metadata.json`} label="Metadata" />
        </section>
        <section className="card" aria-labelledby="properties-title">
          <h2 id="properties-title">Properties</h2>
          <CappedJson value={o.properties ?? {}} filename={`${name}.properties.json`} label="Properties" />
        </section>
      </div>
    </Page>
  );
}
