/**
 * The runs explorer: the project's runs, newest first, in a virtualised table paged by keyset as
 * it scrolls; a Lucene query box (the server's error position marked on a bad query); facet chips
 * with counts; a time histogram; a column picker kept in localStorage; a live toggle. Every filter
 * lives in the URL (search.ts).
 */
import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper, type DataColumn } from '../../components/DataTable.tsx';
import { ApiError } from '../../api/errors.ts';
import { COLUMNS, DEFAULT_COLUMNS, FACETS, type ColumnId, type FacetKey, type RunsSearch } from './search.ts';
import {
  fetchMeta,
  fetchNewer,
  fetchRunsPage,
  formatCost,
  formatDuration,
  formatTime,
  nameOf,
  nextCursor,
  rememberOrder,
  rememberView,
  searchBody,
  type Bucket,
  type Cursor,
  type RunRef,
} from './runsApi.ts';
import { Histogram } from './Histogram.tsx';
import { AddToDatasetButton } from '../datasets/AddFromRuns.tsx';
import { scoreColumn, ScoreColumnsPicker, ScoreFacets } from '../scores/ScoreColumns.tsx';
import './runs.css';

const route = getRouteApi('/_app/runs');
const COLUMNS_KEY = 'orrery.runs.columns';
const LIVE_MS = 2000;

function storedColumns(): ColumnId[] | undefined {
  try {
    const v = JSON.parse(localStorage.getItem(COLUMNS_KEY) ?? 'null');
    if (Array.isArray(v)) {
      const ids = v.filter((c): c is ColumnId => COLUMNS.some((k) => k.id === c));
      if (ids.length) return ids;
    }
  } catch {
    /* ignore */
  }
  return undefined;
}

const col = columnHelper<RunRef>();
const COLUMN_DEFS: Record<ColumnId, DataColumn<RunRef>> = {
  time: col.accessor('updated_at', {
    id: 'time',
    header: 'Time (UTC)',
    cell: (c) => (
      <Link
        to="/runs/$runId"
        params={{ runId: c.row.original.id }}
        className="run-link"
        aria-label={`Run ${c.row.original.id} at ${formatTime(c.getValue())}`}
        onClick={(e) => e.stopPropagation()}
      >
        {formatTime(c.getValue())}
      </Link>
    ),
  }),
  id: col.accessor('id', { id: 'id', header: 'Run id', cell: (c) => <span className="mono">{c.getValue()}</span> }),
  interaction: col.accessor((r) => nameOf(r.interaction), { id: 'interaction', header: 'Interaction' }),
  environment: col.accessor((r) => nameOf(r.environment), { id: 'environment', header: 'Environment' }),
  model: col.accessor((r) => r.model ?? r.modelId ?? '', { id: 'model', header: 'Model' }),
  status: col.accessor('status', {
    id: 'status',
    header: 'Status',
    cell: (c) => <span className={`run-status status-${c.getValue()}`}>{c.getValue()}</span>,
  }),
  tokens: col.accessor((r) => r.token_use?.total, {
    id: 'tokens',
    header: 'Tokens',
    cell: (c) => <span className="num">{c.getValue()?.toLocaleString() ?? ''}</span>,
  }),
  duration: col.accessor('execution_time', {
    id: 'duration',
    header: 'Duration',
    cell: (c) => <span className="num">{formatDuration(c.getValue())}</span>,
  }),
  tags: col.accessor('tags', {
    id: 'tags',
    header: 'Tags',
    cell: (c) =>
      c.getValue()?.length ? (
        <span className="run-tags">
          {c.getValue().map((t: string) => (
            <span key={t} className="tag">
              {t}
            </span>
          ))}
        </span>
      ) : null,
  }),
  cost: col.accessor('cost', {
    id: 'cost',
    header: 'Cost',
    cell: (c) => <span className="num">{formatCost(c.getValue())}</span>,
  }),
  finish_reason: col.accessor((r) => r.finish_reason ?? '', { id: 'finish_reason', header: 'Finish reason' }),
};

export function RunsPage() {
  const search = route.useSearch() as RunsSearch;
  const navigate = route.useNavigate();
  const goTo = useNavigate();
  const qc = useQueryClient();
  const key = useMemo(
    () => ({ q: search.q, facets: search.facets, scoreFilters: search.scoreFilters }),
    [search.q, JSON.stringify(search.facets ?? {}), JSON.stringify(search.scoreFilters ?? {})],
  ); // deps chosen on purpose: not every value read
  const keyText = JSON.stringify(key);
  const scoreNames = search.scores ?? [];
  const metaKey = useMemo(() => ({ ...key, scores: search.scores }), [keyText, scoreNames.join(',')]); // deps chosen on purpose: not every value read
  useEffect(() => rememberView(search), [search]);

  const list = useInfiniteQuery({
    queryKey: ['runs', 'list', key],
    queryFn: ({ pageParam, signal }) => fetchRunsPage(key, pageParam, signal),
    initialPageParam: null as Cursor | null,
    getNextPageParam: (_last, pages) => nextCursor(pages) ?? null,
    staleTime: 30_000,
  });
  const meta = useQuery({
    queryKey: ['runs', 'meta', metaKey],
    queryFn: ({ signal }) => fetchMeta(metaKey, signal),
    staleTime: 30_000,
    enabled: !list.error,
  });

  // Live: runs updated since the newest one shown, polled every 2 s, put on top (a run that moved is moved).
  // Kept in the query cache (not component state), so they are still there after a visit to a run.
  const liveKey = ['runs', 'live', key];
  const liveRows = useQuery({
    queryKey: liveKey,
    queryFn: () => [] as RunRef[],
    initialData: [] as RunRef[],
    staleTime: Infinity,
  }).data;
  const setLiveRows = (fn: (prev: RunRef[]) => RunRef[]) =>
    qc.setQueryData<RunRef[]>(liveKey, (prev) => fn(prev ?? []));
  const [announce, setAnnounce] = useState('');
  const rows = useMemo(() => {
    const base = list.data?.pages.flat() ?? [];
    if (!liveRows.length) return base;
    const seen = new Set(liveRows.map((r) => r.id));
    return [...liveRows, ...base.filter((r) => !seen.has(r.id))];
  }, [list.data, liveRows]);
  const newest = useRef<string | undefined>(undefined);
  newest.current = rows[0]?.updated_at;
  useEffect(() => {
    if (!search.live || list.isPending || list.error) return;
    let stop = false;
    let busy = false;
    const started = new Date().toISOString();
    const timer = setInterval(async () => {
      if (busy || stop) return;
      busy = true;
      try {
        const fresh = await fetchNewer(key, newest.current ?? started);
        if (!stop && fresh.length) {
          setLiveRows((prev) => {
            const ids = new Set(fresh.map((r) => r.id));
            return [...fresh, ...prev.filter((r) => !ids.has(r.id))];
          });
          setAnnounce(
            `${fresh.length} new or updated run${fresh.length === 1 ? '' : 's'} at ${formatTime(new Date().toISOString())}`,
          );
          void qc.invalidateQueries({ queryKey: ['runs', 'meta', metaKey] });
        }
      } catch {
        /* the next poll tries again */
      } finally {
        busy = false;
      }
    }, LIVE_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [search.live, keyText, list.isPending, !!list.error]); // deps chosen on purpose: not every value read

  useEffect(() => {
    if (rows.length) rememberOrder(rows.map((r) => r.id));
  }, [rows]);

  const [saved] = useState(storedColumns);
  const shown: ColumnId[] = search.columns ?? saved ?? [...DEFAULT_COLUMNS];
  const columns = useMemo(
    () => [
      ...COLUMNS.filter((c) => shown.includes(c.id)).map((c) => COLUMN_DEFS[c.id]),
      ...scoreNames.map(scoreColumn),
    ],
    [shown.join(','), scoreNames.join(',')],
  ); // deps chosen on purpose: not every value read
  const setScores = (names: string[]) =>
    void navigate({
      search: (s: RunsSearch) => {
        const kept = Object.fromEntries(Object.entries(s.scoreFilters ?? {}).filter(([n]) => names.includes(n)));
        return {
          ...s,
          scores: names.length ? names : undefined,
          scoreFilters: Object.keys(kept).length ? kept : undefined,
        };
      },
      replace: true,
    });
  const toggleScore = (name: string, value: string) =>
    void navigate({
      search: (s: RunsSearch) => {
        const cur = s.scoreFilters?.[name] ?? [];
        const next = cur.includes(value) ? cur.filter((v) => v !== value) : [...cur, value];
        const f = { ...s.scoreFilters, [name]: next };
        if (!next.length) delete f[name];
        return { ...s, scoreFilters: Object.keys(f).length ? f : undefined };
      },
    });
  const setColumns = (ids: ColumnId[]) => {
    try {
      localStorage.setItem(COLUMNS_KEY, JSON.stringify(ids));
    } catch {
      /* ignore */
    }
    void navigate({ search: (s: RunsSearch) => ({ ...s, columns: ids }), replace: true });
  };

  // navigate() settles when the new route has rendered and reports its own errors: nothing waits.
  const toggleFacet = (k: FacetKey, value: string) =>
    void navigate({
      search: (s: RunsSearch) => {
        const cur = s.facets?.[k] ?? [];
        const next = cur.includes(value) ? cur.filter((v) => v !== value) : [...cur, value];
        const facets = { ...s.facets, [k]: next };
        if (!next.length) delete facets[k];
        return { ...s, facets: Object.keys(facets).length ? facets : undefined };
      },
    });

  // j/k move a cursor through the list (Enter or o opens the run), as on the run detail.
  const [cursor, setCursor] = useState(-1);
  useEffect(() => setCursor(-1), [keyText]);
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const t = e.target as HTMLElement | null;
      if (
        t &&
        (t.isContentEditable ||
          ['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON', 'SUMMARY'].includes(t.tagName) ||
          (t.tagName === 'A' && e.key === 'Enter'))
      )
        return;
      const list = rowsRef.current;
      if (!list.length) return;
      if (e.key === 'j' || e.key === 'k') {
        e.preventDefault();
        setCursor((c) => {
          const next = Math.min(list.length - 1, Math.max(0, e.key === 'j' ? c + 1 : c - 1));
          const scroller = document.querySelector<HTMLElement>('.runs-main .data-table');
          if (scroller) {
            const head = scroller.querySelector('thead')?.getBoundingClientRect().height ?? 36;
            const top = next * 36;
            if (top < scroller.scrollTop) scroller.scrollTop = top;
            else if (top + 36 + head > scroller.scrollTop + scroller.clientHeight)
              scroller.scrollTop = top + 36 + head - scroller.clientHeight;
          }
          return next;
        });
      } else if ((e.key === 'Enter' || e.key === 'o') && cursorRef.current >= 0 && list[cursorRef.current]) {
        e.preventDefault();
        void goTo({ to: '/runs/$runId', params: { runId: list[cursorRef.current].id } });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [goTo]);
  const cursorRef = useRef(cursor);
  cursorRef.current = cursor;
  const selected = cursor >= 0 ? rows[cursor] : undefined;
  useEffect(() => {
    if (selected && rows.length - cursor < 10) fetchMore();
  }, [cursor]); // deps chosen on purpose: not every value read

  const fetchMore = () => {
    if (list.hasNextPage && !list.isFetchingNextPage && !list.error) void list.fetchNextPage();
  };

  return (
    <Page
      title="Runs"
      wide
      actions={
        <>
          <label className="live-toggle">
            <input
              type="checkbox"
              checked={!!search.live}
              onChange={(e) =>
                void navigate({
                  search: (s: RunsSearch) => ({ ...s, live: e.target.checked || undefined }),
                  replace: true,
                })
              }
            />
            Live
            {search.live && <span className="live-dot" aria-hidden="true" />}
          </label>
          <AddToDatasetButton search={searchBody(key)} />
          <ColumnPicker shown={shown} onChange={setColumns} scores={scoreNames} onScores={setScores} />
        </>
      }
    >
      <QueryBox
        value={search.q ?? ''}
        onSubmit={(q) => void navigate({ search: (s: RunsSearch) => ({ ...s, q: q.trim() || undefined }) })}
        error={list.error}
      />
      {list.error && !isQueryError(list.error) && (
        <ErrorBanner error={list.error} onRetry={() => void list.refetch()} />
      )}
      {!list.error && (
        <div className="runs-layout">
          <aside className="runs-facets" aria-label="Facets">
            <FacetPanel facets={meta.data?.facets} chosen={search.facets} onToggle={toggleFacet} rows={rows} />
            <ScoreFacets
              names={scoreNames}
              facets={meta.data?.scoreFacets}
              chosen={search.scoreFilters}
              onToggle={toggleScore}
            />
          </aside>
          <div className="runs-main">
            {meta.data?.histogram ? (
              <Histogram data={meta.data.histogram} total={meta.data.total} />
            ) : (
              <div className="runs-histogram placeholder" aria-hidden="true" />
            )}
            <p className="runs-summary" role="status">
              {list.isPending
                ? ''
                : `${(meta.data?.total ?? rows.length).toLocaleString()} run${(meta.data?.total ?? rows.length) === 1 ? '' : 's'} · ${rows.length.toLocaleString()} loaded${list.isFetchingNextPage ? ', loading more…' : ''}`}
              {announce && search.live ? <span className="muted"> · {announce}</span> : null}
              {selected ? (
                <span className="muted"> · run {(cursor + 1).toLocaleString()} selected (Enter opens it)</span>
              ) : (
                <span className="muted runs-keys">
                  {' '}
                  · <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>Enter</kbd> opens
                </span>
              )}
            </p>
            {list.isPending ? (
              <Loading label="Loading runs…" />
            ) : (
              <DataTable
                label="Runs"
                data={rows}
                columns={columns}
                getRowId={(r) => r.id}
                rowHeight={36}
                height="max(16rem, calc(100vh - 20rem))"
                onNearEnd={fetchMore}
                onRowClick={(r) => void goTo({ to: '/runs/$runId', params: { runId: r.id } })}
                selectedId={selected?.id}
                rowClassName={(r) => (r.status === 'failed' ? 'run-failed' : undefined)}
                empty={
                  search.q || search.facets || search.scoreFilters
                    ? 'No run matches this query.'
                    : 'No runs yet: execute an interaction, and its runs show here.'
                }
              />
            )}
          </div>
        </div>
      )}
    </Page>
  );
}

// ---- the query box ------------------------------------------------------------------------------

interface QueryErrorDetails {
  position?: number;
  line?: number;
  column?: number;
  detail?: string;
  field?: string;
}

function isQueryError(err: unknown): err is ApiError {
  return (
    err instanceof ApiError && err.status === 400 && (err.error === 'invalid_query' || err.error === 'unknown_field')
  );
}

function QueryBox({ value, onSubmit, error }: { value: string; onSubmit: (q: string) => void; error: unknown }) {
  const [text, setText] = useState(value);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => setText(value), [value]);
  const qErr = isQueryError(error) ? error : null;
  const details = (qErr?.details ?? {}) as QueryErrorDetails;
  const pos = typeof details.position === 'number' ? Math.min(Math.max(details.position, 0), value.length) : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(text);
  };
  const focusError = () => {
    if (pos === null || !input.current) return;
    input.current.focus();
    input.current.setSelectionRange(pos, Math.min(pos + 1, value.length));
  };
  return (
    <div className="runs-query-wrap">
      <form role="search" className="runs-query" onSubmit={submit} aria-label="Run search">
        <input
          ref={input}
          type="search"
          aria-label="Search runs"
          aria-describedby="runs-query-help"
          aria-invalid={qErr ? true : undefined}
          aria-errormessage={qErr ? 'runs-query-error' : undefined}
          placeholder="Lucene query, e.g. status:failed AND tags:nightly, or words of the prompt and result"
          value={text}
          onChange={(e) => setText(e.target.value)}
          spellCheck={false}
          autoComplete="off"
        />
        <button type="submit">Search</button>
        {value && (
          <button type="button" className="secondary" onClick={() => onSubmit('')}>
            Clear
          </button>
        )}
      </form>
      <p id="runs-query-help" className="muted runs-query-help">
        Fields: status, interaction, environment, model, tags, finish_reason, created_at, updated_at, execution_time,
        cost.total, prompt, result, … with AND, OR, NOT, ranges [a TO b] and wildcards.
      </p>
      {qErr && (
        <div className="query-error" role="alert" id="runs-query-error">
          <strong>
            Invalid query{pos !== null ? ` at position ${pos}` : ''}
            {details.line && details.column ? ` (line ${details.line}, column ${details.column})` : ''}:
          </strong>{' '}
          {details.detail ?? qErr.message}
          <span className="muted"> · {qErr.error}</span>
          {pos !== null && (
            <pre className="query-error-text" aria-label="The query with the error marked">
              {value.slice(0, pos)}
              <mark className="query-error-mark" title={`position ${pos}`}>
                {value.slice(pos, pos + 1) || ' '}
              </mark>
              {value.slice(pos + 1)}
              {'\n'}
              <span aria-hidden="true">{' '.repeat(pos)}^</span>
            </pre>
          )}
          {pos !== null && (
            <button type="button" className="link" onClick={focusError}>
              Go to the error
            </button>
          )}
        </div>
      )}
    </div>
  );
}

// ---- facets -------------------------------------------------------------------------------------

function FacetPanel({
  facets,
  chosen,
  onToggle,
  rows,
}: {
  facets?: Record<FacetKey, Bucket[]>;
  chosen?: RunsSearch['facets'];
  onToggle: (k: FacetKey, v: string) => void;
  rows: RunRef[];
}) {
  // Names of interactions and environments for chosen values the facets do not list.
  const names = useMemo(() => {
    const m = new Map<string, string>();
    for (const r of rows.slice(0, 500)) {
      if (r.interaction?.name) m.set(r.interaction.id, r.interaction.name);
      if (r.environment?.name) m.set(r.environment.id, r.environment.name);
    }
    for (const list of Object.values(facets ?? {}))
      for (const b of list) if (b.name && b._id !== null) m.set(String(b._id), b.name);
    return m;
  }, [rows, facets]);
  const active = FACETS.flatMap((f) => (chosen?.[f.key] ?? []).map((v) => ({ f, v })));
  return (
    <>
      {active.length > 0 && (
        <div className="facet-active">
          <h2 className="facet-title">Filters</h2>
          <ul className="chips">
            {active.map(({ f, v }) => (
              <li key={`${f.key}:${v}`}>
                <button type="button" className="chip chip-active" onClick={() => onToggle(f.key, v)}>
                  <span className="visually-hidden">Remove filter </span>
                  {f.label}: {names.get(v) ?? v} <span aria-hidden="true">×</span>
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      {!facets ? (
        <p className="muted">Counting…</p>
      ) : (
        FACETS.map((f) => {
          const buckets = facets[f.key] ?? [];
          if (!buckets.length) return null;
          return (
            <div className="facet-group" key={f.key}>
              <h2 className="facet-title">{f.label}</h2>
              <ul className="chips">
                {buckets.map((b) => {
                  const v = String(b._id);
                  const on = chosen?.[f.key]?.includes(v) ?? false;
                  const label = b.name ?? names.get(v) ?? v;
                  return (
                    <li key={v}>
                      <button
                        type="button"
                        className={`chip${on ? ' chip-on' : ''}${f.key === 'status' ? ` chip-status-${v}` : ''}`}
                        aria-pressed={on}
                        onClick={() => onToggle(f.key, v)}
                        title={`${f.label}: ${label}`}
                      >
                        <span className="visually-hidden">{f.label.toLowerCase()}: </span>
                        <span className="chip-label">{label}</span>{' '}
                        <span className="chip-count">{b.count.toLocaleString()}</span>
                        <span className="visually-hidden"> runs</span>
                      </button>
                    </li>
                  );
                })}
              </ul>
            </div>
          );
        })
      )}
    </>
  );
}

// ---- columns ------------------------------------------------------------------------------------

function ColumnPicker({
  shown,
  onChange,
  scores,
  onScores,
}: {
  shown: ColumnId[];
  onChange: (ids: ColumnId[]) => void;
  scores: string[];
  onScores: (names: string[]) => void;
}) {
  return (
    <details className="column-picker">
      <summary>Columns</summary>
      <fieldset>
        <legend>Visible columns</legend>
        {COLUMNS.map((c) => (
          <label key={c.id}>
            <input
              type="checkbox"
              checked={shown.includes(c.id)}
              disabled={shown.length === 1 && shown.includes(c.id)}
              onChange={(e) =>
                onChange(
                  e.target.checked
                    ? COLUMNS.map((k) => k.id).filter((id) => id === c.id || shown.includes(id))
                    : shown.filter((id) => id !== c.id),
                )
              }
            />
            {c.label}
          </label>
        ))}
        <button type="button" className="link" onClick={() => onChange([...DEFAULT_COLUMNS])}>
          Reset to default
        </button>
        <ScoreColumnsPicker names={scores} onChange={onScores} />
      </fieldset>
    </details>
  );
}
