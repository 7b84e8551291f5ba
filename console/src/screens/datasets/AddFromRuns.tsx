/**
 * "Add to dataset" from the runs explorer: copies the newest completed runs of the explorer's
 * current search (its query and facet filters) into a dataset (POST /datasets/:id/items
 * {from_runs}); says how many were added and which runs were skipped and why.
 */
import { useState, type FormEvent } from 'react';
import { Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { addFromRuns, listDatasets, MAX_FROM_RUNS, type AddAnswer } from './datasetsApi.ts';
import './eval-screens.css';

export interface RunSearchBody {
  query: string;
  filters: Record<string, unknown>;
}

/** The form alone: the dataset (chosen, or fixed by `datasetId`), how many runs, Add. */
export function AddFromRunsForm({ search, datasetId }: { search: RunSearchBody; datasetId?: string }) {
  const qc = useQueryClient();
  const datasets = useQuery({
    queryKey: ['datasets'],
    queryFn: ({ signal }) => listDatasets(signal),
    enabled: !datasetId,
  });
  const [chosen, setChosen] = useState('');
  const [limit, setLimit] = useState('100');
  const target = datasetId ?? (chosen || datasets.data?.[0]?.id || '');
  const n = Number(limit);
  const limitOk = Number.isInteger(n) && n >= 1 && n <= MAX_FROM_RUNS;
  const add = useMutation({
    mutationFn: () =>
      addFromRuns(target, {
        ...(search.query ? { query: search.query } : {}),
        ...(Object.keys(search.filters).length ? { filters: search.filters } : {}),
        limit: n,
      }),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['datasets'] });
      void qc.invalidateQueries({ queryKey: ['dataset', target] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (target && limitOk) add.mutate();
  };
  const filters = Object.entries(search.filters);
  return (
    <form className="eval-form" onSubmit={submit} aria-label="Add runs to a dataset">
      <p className="muted eval-full">
        Copies the newest completed runs of{' '}
        {search.query || filters.length ? (
          <>
            the search <code>{search.query || '*'}</code>
            {filters.length > 0 && (
              <>
                {' '}
                with{' '}
                {filters.map(([k, v]) => (
                  <code key={k}>
                    {k}={JSON.stringify(v)}{' '}
                  </code>
                ))}
              </>
            )}
          </>
        ) : (
          'all runs'
        )}
        : each run’s data as the item’s data, its answer as expected.
      </p>
      {!datasetId &&
        (datasets.error ? (
          <ErrorBanner error={datasets.error} />
        ) : datasets.data && datasets.data.length === 0 ? (
          <p className="muted eval-full">
            No datasets yet: <Link to="/datasets">make one</Link>.
          </p>
        ) : (
          <label>
            Dataset
            <select value={target} onChange={(e) => setChosen(e.target.value)}>
              {(datasets.data ?? []).map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name} (v{d.version}, {d.item_count} items)
                </option>
              ))}
            </select>
          </label>
        ))}
      <label>
        Runs to copy <span className="muted">(1 to {MAX_FROM_RUNS})</span>
        <input
          type="number"
          min={1}
          max={MAX_FROM_RUNS}
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
          aria-invalid={!limitOk || undefined}
        />
      </label>
      <button type="submit" disabled={add.isPending || !target || !limitOk}>
        {add.isPending ? 'Adding…' : 'Add runs'}
      </button>
      <p role="status" className="muted eval-full">
        {add.data ? added(add.data) : ''}
      </p>
      {add.data?.skipped && add.data.skipped.length > 0 && (
        <details className="eval-full">
          <summary>
            {add.data.skipped.length} run{add.data.skipped.length === 1 ? '' : 's'} skipped
          </summary>
          <ul>
            {add.data.skipped.slice(0, 100).map((s) => (
              <li key={s.run}>
                <Link to="/runs/$runId" params={{ runId: s.run }}>
                  {s.run}
                </Link>
                : {s.reason}
              </li>
            ))}
          </ul>
        </details>
      )}
      <ErrorBanner error={add.error} title="Nothing added" />
    </form>
  );
}

const added = (a: AddAnswer) =>
  `Added ${a.ids.length} item${a.ids.length === 1 ? '' : 's'} to version ${a.version}` +
  (a.skipped?.length ? `; ${a.skipped.length} skipped.` : '.');

/** The explorer's button: a disclosure with the form. */
export function AddToDatasetButton({ search }: { search: RunSearchBody }) {
  return (
    <details className="add-to-dataset">
      <summary>Add to dataset</summary>
      <div className="add-to-dataset-panel">
        <AddFromRunsForm search={search} />
      </div>
    </details>
  );
}
