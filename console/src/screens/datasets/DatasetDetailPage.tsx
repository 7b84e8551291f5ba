/**
 * One dataset: its versions (the current one, the frozen one; any version's items readable), its
 * items by page, adding items by hand (JSON) or from the runs explorer's current search, taking
 * an item out, freezing the current version, and the JSON Lines export of the version shown.
 */
import { useState, type FormEvent } from 'react';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { downloadText } from '../../components/CappedText.tsx';
import { explorerView, formatTime, searchBody } from '../runs/runsApi.ts';
import {
  addItems,
  datasetItems,
  deleteItem,
  exportJsonl,
  freezeVersion,
  getDataset,
  ITEMS_PAGE,
  parseItems,
  type Dataset,
  type DatasetItem,
} from './datasetsApi.ts';
import { AddFromRunsForm } from './AddFromRuns.tsx';
import type { DatasetDetailSearch } from './search.ts';
import './eval-screens.css';

const route = getRouteApi('/_app/datasets/$datasetId');

const short = (v: unknown, max = 160): string => {
  if (v === undefined) return '';
  const t = typeof v === 'string' ? v : JSON.stringify(v);
  return t.length > max ? `${t.slice(0, max)}…` : t;
};

export function DatasetDetailPage() {
  const { datasetId } = route.useParams();
  const search = route.useSearch() as DatasetDetailSearch;
  const navigate = route.useNavigate();
  const qc = useQueryClient();
  const dataset = useQuery({
    queryKey: ['dataset', datasetId],
    queryFn: ({ signal }) => getDataset(datasetId, signal),
  });
  const d = dataset.data;
  const version = search.version ?? d?.version;
  const offset = search.offset ?? 0;
  const items = useQuery({
    queryKey: ['dataset', datasetId, 'items', version, offset],
    queryFn: ({ signal }) => datasetItems(datasetId, { version, offset }, signal),
    enabled: version !== undefined,
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: ['dataset', datasetId] });
  const freeze = useMutation({ mutationFn: () => freezeVersion(datasetId), onSuccess: refresh });
  const remove = useMutation({ mutationFn: (it: DatasetItem) => deleteItem(datasetId, it.id), onSuccess: refresh });
  const exporting = useMutation({
    mutationFn: async (v: number) =>
      downloadText(await exportJsonl(datasetId, v), `${d?.name ?? datasetId}-v${v}.jsonl`, 'application/x-ndjson'),
  });
  const frozen = d && version !== undefined && d.frozen_version !== null && version <= d.frozen_version;
  const current = d && version === d.version;
  const go = (s: DatasetDetailSearch) => void navigate({ search: s, replace: true });

  return (
    <Page
      title={d ? `Dataset ${d.name}` : 'Dataset'}
      actions={
        d && (
          <button
            type="button"
            className="secondary"
            disabled={exporting.isPending}
            onClick={() => exporting.mutate(version ?? d.version)}
          >
            Export version {version} as JSONL
          </button>
        )
      }
    >
      <p>
        <Link to="/datasets">← All datasets</Link>
      </p>
      <ErrorBanner error={exporting.error} title="Not exported" />
      {dataset.error ? (
        <ErrorBanner error={dataset.error} onRetry={() => void dataset.refetch()} />
      ) : !d ? (
        <Loading label="Loading the dataset…" />
      ) : (
        <>
          <Versions d={d} version={version!} onPick={(v) => go(v === d.version ? {} : { version: v })} />
          {d.description && <p>{d.description}</p>}
          <section className="card" aria-labelledby="items-h">
            <h2 id="items-h">
              Items of version {version}
              {frozen ? ' (frozen)' : current ? ' (current)' : ''}
            </h2>
            {items.error ? (
              <ErrorBanner error={items.error} onRetry={() => void items.refetch()} />
            ) : !items.data ? (
              <Loading label="Loading the items…" />
            ) : items.data.length === 0 && offset === 0 ? (
              <p className="muted">No items in this version.</p>
            ) : (
              <>
                <table className="eval-table" aria-label="Items">
                  <thead>
                    <tr>
                      <th scope="col">#</th>
                      <th scope="col">Data</th>
                      <th scope="col">Expected</th>
                      <th scope="col">Source run</th>
                      <th scope="col">Added in</th>
                      {current && (
                        <th scope="col">
                          <span className="visually-hidden">Actions</span>
                        </th>
                      )}
                    </tr>
                  </thead>
                  <tbody>
                    {items.data.map((it, i) => (
                      <tr key={it.id}>
                        <td className="num">{offset + i + 1}</td>
                        <td className="mono eval-wrap">{short(it.data)}</td>
                        <td className="mono eval-wrap">{short(it.expected)}</td>
                        <td>
                          {it.source_run ? (
                            <Link to="/runs/$runId" params={{ runId: it.source_run }}>
                              {it.source_run}
                            </Link>
                          ) : (
                            ''
                          )}
                        </td>
                        <td className="num">v{it.version_added}</td>
                        {current && (
                          <td>
                            <button
                              type="button"
                              className="link"
                              disabled={remove.isPending}
                              onClick={() => remove.mutate(it)}
                              aria-label={`Remove item ${offset + i + 1}`}
                            >
                              Remove
                            </button>
                          </td>
                        )}
                      </tr>
                    ))}
                  </tbody>
                </table>
                <nav className="eval-pager" aria-label="Pages of items">
                  <button
                    type="button"
                    className="secondary"
                    disabled={offset === 0}
                    onClick={() => go({ ...search, offset: Math.max(0, offset - ITEMS_PAGE) || undefined })}
                  >
                    Previous page
                  </button>
                  <span className="muted" role="status">
                    Items {items.data.length ? offset + 1 : offset}–{offset + items.data.length}
                    {current ? ` of ${d.item_count.toLocaleString()}` : ''}
                  </span>
                  <button
                    type="button"
                    className="secondary"
                    disabled={items.data.length < ITEMS_PAGE}
                    onClick={() => go({ ...search, offset: offset + ITEMS_PAGE })}
                  >
                    Next page
                  </button>
                </nav>
              </>
            )}
            <ErrorBanner error={remove.error} title="Not removed" />
          </section>
          <section className="card" aria-labelledby="add-items-h">
            <h2 id="add-items-h">Add items</h2>
            <p className="muted">
              Added to version {d.version}
              {d.frozen_version === d.version ? ', which is frozen: the change makes the next version' : ''}.
            </p>
            <AddByHand datasetId={datasetId} onDone={refresh} />
            <h3>From runs</h3>
            <AddFromRunsForm datasetId={datasetId} search={searchBody(explorerView())} />
            <p className="muted">
              The search is the runs explorer’s current one:{' '}
              <Link to="/runs" search={explorerView()}>
                change it
              </Link>
              .
            </p>
          </section>
          <section className="card" aria-labelledby="freeze-h">
            <h2 id="freeze-h">Freeze</h2>
            <p className="muted">
              Freezing version {d.version} keeps it as it is now; the next change makes version {d.version + 1}.
            </p>
            <button
              type="button"
              className="secondary"
              disabled={freeze.isPending || d.frozen_version === d.version}
              onClick={() => freeze.mutate()}
            >
              {d.frozen_version === d.version ? `Version ${d.version} is frozen` : `Freeze version ${d.version}`}
            </button>
            <ErrorBanner error={freeze.error} title="Not frozen" />
          </section>
        </>
      )}
    </Page>
  );
}

function Versions({ d, version, onPick }: { d: Dataset; version: number; onPick: (v: number) => void }) {
  return (
    <section className="card eval-versions" aria-labelledby="versions-h">
      <h2 id="versions-h">Versions</h2>
      <dl className="eval-kv">
        <div>
          <dt>Current</dt>
          <dd>
            {d.version} ({d.item_count.toLocaleString()} items)
          </dd>
        </div>
        <div>
          <dt>Frozen</dt>
          <dd>{d.frozen_version ?? 'none yet'}</dd>
        </div>
        <div>
          <dt>Updated</dt>
          <dd>{formatTime(d.updated_at)} UTC</dd>
        </div>
      </dl>
      <label>
        Version shown
        <select value={version} onChange={(e) => onPick(Number(e.target.value))}>
          {Array.from({ length: d.version }, (_, i) => d.version - i).map((v) => (
            <option key={v} value={v}>
              {v}
              {v === d.version ? ' (current)' : ''}
              {d.frozen_version !== null && v <= d.frozen_version ? ' (frozen)' : ''}
            </option>
          ))}
        </select>
      </label>
    </section>
  );
}

const EXAMPLE = '[\n  {"data": {"text": "Which planet has rings?"}, "expected": "Saturn"}\n]';

function AddByHand({ datasetId, onDone }: { datasetId: string; onDone: () => void }) {
  const [text, setText] = useState(EXAMPLE);
  const [bad, setBad] = useState<string | null>(null);
  const add = useMutation({
    mutationFn: (items: ReturnType<typeof parseItems>) => addItems(datasetId, items),
    onSuccess: () => onDone(),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    try {
      const items = parseItems(text);
      setBad(null);
      add.mutate(items);
    } catch (err) {
      setBad((err as Error).message);
    }
  };
  return (
    <form className="eval-form" onSubmit={submit} aria-label="Add items as JSON">
      <label className="eval-json">
        Items (JSON)
        <textarea
          value={text}
          onChange={(e) => setText(e.target.value)}
          rows={6}
          spellCheck={false}
          aria-invalid={bad ? true : undefined}
          aria-describedby="items-json-help"
        />
      </label>
      <p id="items-json-help" className="muted eval-full">
        An array of <code>{'{"data": {…}, "expected"?: …, "metadata"?: {…}}'}</code>, or JSON Lines; at most 1,000 at
        once.
      </p>
      <button type="submit" disabled={add.isPending}>
        Add items
      </button>
      <p role="status" className="muted eval-full">
        {add.data
          ? `Added ${add.data.ids.length} item${add.data.ids.length === 1 ? '' : 's'} to version ${add.data.version}.`
          : ''}
      </p>
      {bad && (
        <p className="error-banner eval-full" role="alert">
          {bad}
        </p>
      )}
      <ErrorBanner error={add.error} title="Nothing added" />
    </form>
  );
}
