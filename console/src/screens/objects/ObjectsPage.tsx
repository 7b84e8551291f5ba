/**
 * The objects browser: folders (from the objects' `location`), a page of objects, upload of files
 * with progress, search by name and full text, selection and export as CSV or JSON.
 */
import { useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { getRouteApi, Link } from '@tanstack/react-router';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { client } from '../../api/client.ts';
import { errorMessage } from '../../api/errors.ts';
import { Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper, type DataColumn } from '../../components/DataTable.tsx';
import { downloadText } from '../../components/CappedText.tsx';
import { formatBytes, formatDate, joinLocation, segmentsOf, StatusBadge, useNarrow } from './format.tsx';
import { uploadObject } from './upload.ts';
import type { ObjectsSearch } from './search.ts';
import './objects.css';

const route = getRouteApi('/_app/objects');
export const PAGE_SIZE = 50;

/** What a row of the table shows (a list or search item). */
export interface ObjectRow {
  id: string;
  name?: string;
  status?: string;
  location?: string;
  type?: { id: string; name: string } | null;
  content?: { type?: string; name?: string; source?: string } | null;
  metadata?: { size?: number; mime_type?: string } | null;
  updated_at?: string;
}

const pending = (status?: string) => status === 'created' || status === 'processing';

/** The filters of the current view, as the search and export APIs take them. */
function queryOf(search: ObjectsSearch) {
  return {
    ...(search.location ? { location: search.location } : {}),
    ...(search.q ? { name: search.q } : {}),
    ...(search.text ? { full_text: search.text } : {}),
  };
}

async function fetchPage(search: ObjectsSearch): Promise<ObjectRow[]> {
  const offset = (search.page ?? 0) * PAGE_SIZE;
  // One more than a page: whether there is a next page.
  const limit = PAGE_SIZE + 1;
  if (search.text) {
    const res = await client().objects.search({ query: queryOf(search), limit, offset } as never);
    return res.results as unknown as ObjectRow[];
  }
  const { full_text: _ignored, ...query } = queryOf(search) as Record<string, string>;
  return (await client().objects.list({ limit, offset, query } as never)) as unknown as ObjectRow[];
}

interface FolderNode {
  path: string;
  name: string;
  count: number;
  children: FolderNode[];
}

/** Every folder (and its ancestors) from the locations' facet, as a tree under `/`. */
function folderTree(buckets: Array<{ _id: unknown; count: number }>): FolderNode {
  const root: FolderNode = { path: '/', name: 'Top level', count: 0, children: [] };
  for (const b of buckets) {
    if (typeof b._id !== 'string') continue;
    let node = root;
    const segs = segmentsOf(b._id);
    segs.forEach((seg, i) => {
      const path = joinLocation(segs.slice(0, i + 1));
      let child = node.children.find((c) => c.path === path);
      if (!child) {
        child = { path, name: seg, count: 0, children: [] };
        node.children.push(child);
        node.children.sort((a, c) => a.name.localeCompare(c.name));
      }
      node = child;
    });
    node.count += b.count;
  }
  return root;
}

function FolderIcon() {
  return (
    <svg className="folder-icon" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false">
      <path
        d="M1.5 3.5h4l1.5 1.5h7.5v8h-13z"
        fill="currentColor"
        opacity="0.35"
        stroke="currentColor"
        strokeWidth="1"
      />
    </svg>
  );
}

function FolderTree({ node, current }: { node: FolderNode; current?: string }) {
  return (
    <li>
      <Link
        to="/objects"
        search={{ location: node.path }}
        className={current === node.path ? 'folder current' : 'folder'}
        aria-current={current === node.path ? 'page' : undefined}
        title={node.path}
      >
        <FolderIcon />
        {node.name}
        {node.count > 0 && <span className="muted"> ({node.count})</span>}
      </Link>
      {node.children.length > 0 && (
        <ul>
          {node.children.map((c) => (
            <FolderTree key={c.path} node={c} current={current} />
          ))}
        </ul>
      )}
    </li>
  );
}

interface UploadItem {
  key: string;
  name: string;
  size: number;
  loaded: number;
  state: 'uploading' | 'created' | 'failed';
  objectId?: string;
  error?: string;
}

/** A search box that writes to the URL a moment after typing stops (and at once on Enter). */
function SearchBox({
  label,
  value,
  placeholder,
  onSearch,
}: {
  label: string;
  value?: string;
  placeholder: string;
  onSearch: (v: string | undefined) => void;
}) {
  const [text, setText] = useState(value ?? '');
  useEffect(() => setText(value ?? ''), [value]);
  useEffect(() => {
    if ((value ?? '') === text) return;
    const t = setTimeout(() => onSearch(text.trim() || undefined), 350);
    return () => clearTimeout(t);
  }, [text]); // deps chosen on purpose: not every value read
  return (
    <input
      type="search"
      aria-label={label}
      placeholder={placeholder}
      value={text}
      onChange={(e) => setText(e.target.value)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') onSearch(text.trim() || undefined);
      }}
    />
  );
}

export function ObjectsPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const qc = useQueryClient();
  const page = search.page ?? 0;
  const narrow = useNarrow();

  const objects = useQuery({
    queryKey: ['objects', 'page', search],
    queryFn: () => fetchPage(search),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data?.some((o) => pending(o.status)) ? 1000 : false),
  });
  const folders = useQuery({
    queryKey: ['objects', 'folders'],
    queryFn: () =>
      client().objects.computeFacets({ facets: [{ name: 'location', field: 'location' }], query: {} } as never),
  });
  const tree = useMemo(
    () =>
      folderTree(
        ((folders.data as Record<string, unknown> | undefined)?.location as Array<{ _id: unknown; count: number }>) ??
          [],
      ),
    [folders.data],
  );

  const rows = useMemo(() => (objects.data ?? []).slice(0, PAGE_SIZE), [objects.data]);
  const hasNext = (objects.data?.length ?? 0) > PAGE_SIZE;

  // Selection: ids, kept while paging; cleared when the view (folder or search) changes.
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const viewKey = `${search.location ?? ''}|${search.q ?? ''}|${search.text ?? ''}`;
  useEffect(() => setSelected(new Set()), [viewKey]);
  const toggle = (id: string, on: boolean) =>
    setSelected((s) => {
      const n = new Set(s);
      if (on) n.add(id);
      else n.delete(id);
      return n;
    });
  const allOnPage = rows.length > 0 && rows.every((r) => selected.has(r.id));

  const columns = useMemo(() => {
    const col = columnHelper<ObjectRow>();
    return [
      col.display({
        id: 'select',
        ...({ size: 40 } as object),
        header: () => (
          <input
            type="checkbox"
            aria-label="Select every object on this page"
            checked={allOnPage}
            onChange={(e) =>
              setSelected((s) => {
                const n = new Set(s);
                for (const r of rows)
                  if (e.target.checked) n.add(r.id);
                  else n.delete(r.id);
                return n;
              })
            }
          />
        ),
        cell: (c) => {
          const r = c.row.original as ObjectRow;
          return (
            <input
              type="checkbox"
              aria-label={`Select ${r.name ?? r.id}`}
              checked={selected.has(r.id)}
              onChange={(e) => toggle(r.id, e.target.checked)}
            />
          );
        },
      }),
      col.accessor('name', {
        header: 'Name',
        cell: (c) => {
          const r = c.row.original as ObjectRow;
          return (
            <Link to="/objects/$objectId" params={{ objectId: r.id }} className="obj-name">
              {r.name || r.id}
            </Link>
          );
        },
      }),
      col.display({
        id: 'type',
        header: 'Type',
        cell: (c) => {
          const r = c.row.original as ObjectRow;
          return r.type?.name ?? r.metadata?.mime_type ?? r.content?.type ?? '—';
        },
      }),
      col.display({
        id: 'size',
        header: 'Size',
        cell: (c) => formatBytes((c.row.original as ObjectRow).metadata?.size),
      }),
      col.accessor('status', {
        header: 'Status',
        cell: (c) => <StatusBadge status={c.getValue() as string | undefined} />,
      }),
      col.accessor('updated_at', {
        header: 'Updated',
        cell: (c) => <time dateTime={c.getValue() as string}>{formatDate(c.getValue())}</time>,
      }),
    ] as DataColumn<ObjectRow>[];
  }, [rows, selected, allOnPage]); // deps chosen on purpose: not every value read

  // Uploads
  const [uploads, setUploads] = useState<UploadItem[]>([]);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const patch = (key: string, p: Partial<UploadItem>) =>
    setUploads((u) => u.map((x) => (x.key === key ? { ...x, ...p } : x)));
  const uploadFiles = (files: File[]) => {
    if (!files.length) return;
    const location = search.location ?? '/';
    const items = files.map((f, i) => ({
      key: `${Date.now()}-${i}-${f.name}`,
      name: f.name,
      size: f.size,
      loaded: 0,
      state: 'uploading' as const,
    }));
    setUploads((u) => [...items, ...u].slice(0, 50));
    files.forEach((f, i) => {
      const key = items[i].key;
      uploadObject(f, location, (p) => patch(key, { loaded: p.loaded, size: p.total || f.size }))
        .then((obj) => {
          patch(key, { state: 'created', objectId: obj.id, loaded: f.size });
          void qc.invalidateQueries({ queryKey: ['objects'] });
        })
        .catch((err: unknown) => patch(key, { state: 'failed', error: errorMessage(err) }));
    });
  };
  const statusById = useMemo(() => new Map(rows.map((r) => [r.id, r.status])), [rows]);
  // Statuses of uploaded objects not on this page: polled while they process.
  const offPage = uploads.filter((u) => u.objectId && !statusById.has(u.objectId)).map((u) => u.objectId!);
  const uploadedStatus = useQuery({
    queryKey: ['objects', 'uploaded', offPage],
    enabled: offPage.length > 0,
    queryFn: async () => {
      const list = (await client().objects.list({
        limit: offPage.length,
        query: { ids: offPage },
      } as never)) as unknown as ObjectRow[];
      return new Map(list.map((o) => [o.id, o.status]));
    },
    refetchInterval: (q) =>
      [...(q.state.data?.values() ?? [])].some((s) => pending(s)) || !q.state.data ? 1000 : false,
  });
  const statusOf = (id: string) => statusById.get(id) ?? uploadedStatus.data?.get(id);

  // Export
  const [exporting, setExporting] = useState<string | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const doExport = async (type: 'CSV' | 'JSON') => {
    setExporting(type);
    setExportError(null);
    try {
      const ids = [...selected];
      const res = await client().objects.exportProperties({
        objectIds: ids,
        type,
        ...(ids.length ? {} : { query: queryOf(search) }),
      } as never);
      const r = res as unknown as { type: string; name: string; data: string };
      downloadText(r.data, r.name, r.type);
    } catch (err) {
      setExportError(err);
    } finally {
      setExporting(null);
    }
  };

  // The router's navigate() settles when the new route has rendered and reports its own errors;
  // nothing waits for it here.
  const setSearch = (patchS: Partial<ObjectsSearch>) =>
    void navigate({ search: (s: ObjectsSearch) => ({ ...s, ...patchS, page: undefined }) as never });
  const crumbs = search.location ? segmentsOf(search.location) : null;

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    uploadFiles([...e.dataTransfer.files]);
  };

  return (
    <Page
      title="Objects"
      wide
      actions={
        <>
          <button type="button" className="secondary" disabled={!!exporting} onClick={() => void doExport('CSV')}>
            {selected.size ? `Export ${selected.size} as CSV` : 'Export CSV'}
          </button>
          <button type="button" className="secondary" disabled={!!exporting} onClick={() => void doExport('JSON')}>
            {selected.size ? `Export ${selected.size} as JSON` : 'Export JSON'}
          </button>
        </>
      }
    >
      {exportError != null && <ErrorBanner error={exportError} title="Export failed" />}
      <div className="objects-layout">
        <aside className="card folders" aria-labelledby="folders-title">
          <h2 id="folders-title">Folders</h2>
          <nav aria-label="Folders">
            <ul className="folder-tree">
              <li>
                <Link
                  to="/objects"
                  search={{}}
                  className={!search.location ? 'folder current' : 'folder'}
                  aria-current={!search.location ? 'page' : undefined}
                >
                  All objects
                </Link>
              </li>
              <FolderTree node={tree} current={search.location} />
            </ul>
          </nav>
          {folders.error != null && <p className="muted">Folders unavailable: {errorMessage(folders.error)}</p>}
        </aside>

        <div className="objects-main">
          <nav aria-label="Breadcrumb" className="breadcrumb">
            <ol>
              <li>
                <Link to="/objects" search={{}} aria-current={crumbs ? undefined : 'page'}>
                  All objects
                </Link>
              </li>
              {crumbs && (
                <li>
                  <Link
                    to="/objects"
                    search={{ location: '/' }}
                    aria-current={crumbs.length === 0 ? 'page' : undefined}
                  >
                    Top level
                  </Link>
                </li>
              )}
              {crumbs?.map((seg, i) => (
                <li key={i}>
                  <Link
                    to="/objects"
                    search={{ location: joinLocation(crumbs.slice(0, i + 1)) }}
                    aria-current={i === crumbs.length - 1 ? 'page' : undefined}
                  >
                    {seg}
                  </Link>
                </li>
              ))}
            </ol>
          </nav>

          <div className="objects-toolbar" role="search" aria-label="Objects">
            <SearchBox
              label="Search by name"
              placeholder="Name contains…"
              value={search.q}
              onSearch={(q) => setSearch({ q })}
            />
            <SearchBox
              label="Full-text search"
              placeholder="Words in the text…"
              value={search.text}
              onSearch={(text) => setSearch({ text })}
            />
          </div>

          <div
            className={dragging ? 'dropzone dragging' : 'dropzone'}
            onDragOver={(e) => {
              e.preventDefault();
              setDragging(true);
            }}
            onDragLeave={() => setDragging(false)}
            onDrop={onDrop}
          >
            <label htmlFor="object-upload" className="button">
              Upload files
            </label>
            <input
              id="object-upload"
              ref={fileInput}
              className="visually-hidden"
              type="file"
              multiple
              onChange={(e) => {
                uploadFiles([...(e.target.files ?? [])]);
                e.target.value = '';
              }}
            />
            <span className="muted">or drop files here, into {search.location ?? '/'}</span>
          </div>

          {uploads.length > 0 && (
            <section aria-labelledby="uploads-title" className="card uploads">
              <div className="uploads-head">
                <h2 id="uploads-title">Uploads</h2>
                <button
                  type="button"
                  className="link"
                  onClick={() => setUploads((u) => u.filter((x) => x.state === 'uploading'))}
                >
                  Clear finished
                </button>
              </div>
              <ul>
                {uploads.map((u) => {
                  const status = u.objectId ? statusOf(u.objectId) : undefined;
                  return (
                    <li key={u.key} className="upload-item">
                      <span className="upload-name">
                        {u.objectId ? (
                          <Link to="/objects/$objectId" params={{ objectId: u.objectId }}>
                            {u.name}
                          </Link>
                        ) : (
                          u.name
                        )}
                      </span>
                      <progress aria-label={`Upload of ${u.name}`} max={u.size || 1} value={u.loaded} />
                      <span className="upload-state" data-testid="upload-state">
                        {u.state === 'failed' ? (
                          <span className="status-failed">{u.error}</span>
                        ) : u.state === 'uploading' ? (
                          `${Math.round((u.loaded / (u.size || 1)) * 100)}%`
                        ) : (
                          <StatusBadge status={status ?? 'created'} />
                        )}
                      </span>
                    </li>
                  );
                })}
              </ul>
            </section>
          )}

          {objects.error ? (
            <ErrorBanner error={objects.error} onRetry={() => void objects.refetch()} />
          ) : (
            <>
              <div className="selection-bar" aria-live="polite">
                {selected.size > 0 ? (
                  <>
                    <span>{selected.size} selected</span>
                    <button type="button" className="link" onClick={() => setSelected(new Set())}>
                      Clear selection
                    </button>
                  </>
                ) : (
                  <span className="muted">
                    {objects.isPending
                      ? 'Loading…'
                      : `${rows.length}${hasNext ? '+' : ''} object${rows.length === 1 ? '' : 's'}`}
                    {search.location ? ` in ${search.location}` : ''}. Nothing selected: export takes this view.
                  </span>
                )}
              </div>
              <DataTable
                label="Objects"
                data={rows}
                columns={columns}
                getRowId={(r) => r.id}
                columnVisibility={narrow ? { type: false, updated_at: false } : undefined}
                height="min(60vh, 720px)"
                empty={objects.isPending ? 'Loading…' : 'No objects here.'}
              />
              <div className="pager">
                <button
                  type="button"
                  className="secondary"
                  disabled={page === 0}
                  onClick={() =>
                    void navigate({ search: (s: ObjectsSearch) => ({ ...s, page: page - 1 || undefined }) as never })
                  }
                >
                  Previous page
                </button>
                <span>Page {page + 1}</span>
                <button
                  type="button"
                  className="secondary"
                  disabled={!hasNext}
                  onClick={() => void navigate({ search: (s: ObjectsSearch) => ({ ...s, page: page + 1 }) as never })}
                >
                  Next page
                </button>
              </div>
            </>
          )}
        </div>
      </div>
    </Page>
  );
}
