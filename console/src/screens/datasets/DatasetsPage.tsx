/** Datasets: the project's list (name, versions, items) and a form that makes one (POST /datasets). */
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { formatTime } from '../runs/runsApi.ts';
import { createDataset, listDatasets } from './datasetsApi.ts';
import './eval-screens.css';

export function DatasetsPage() {
  const datasets = useQuery({ queryKey: ['datasets'], queryFn: ({ signal }) => listDatasets(signal) });
  return (
    <Page title="Datasets">
      <p className="muted">
        Inputs with the answers you expect, under versions: a frozen version reads the same forever. Fill one by hand or
        from the runs explorer’s current search (“Add to dataset”).
      </p>
      {datasets.error ? (
        <ErrorBanner error={datasets.error} onRetry={() => void datasets.refetch()} />
      ) : !datasets.data ? (
        <Loading label="Loading the datasets…" />
      ) : datasets.data.length === 0 ? (
        <p className="muted">No datasets yet.</p>
      ) : (
        <table className="eval-table" aria-label="Datasets">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Items</th>
              <th scope="col">Version</th>
              <th scope="col">Frozen</th>
              <th scope="col">Updated (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {datasets.data.map((d) => (
              <tr key={d.id}>
                <td>
                  <Link to="/datasets/$datasetId" params={{ datasetId: d.id }}>
                    {d.name}
                  </Link>
                </td>
                <td className="eval-wrap">{d.description ?? ''}</td>
                <td className="num">{d.item_count.toLocaleString()}</td>
                <td className="num">{d.version}</td>
                <td className="num">{d.frozen_version ?? '—'}</td>
                <td>{formatTime(d.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <NewDataset />
    </Page>
  );
}

function NewDataset() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: createDataset,
    onSuccess: (d) => {
      void qc.invalidateQueries({ queryKey: ['datasets'] });
      void navigate({ to: '/datasets/$datasetId', params: { datasetId: d.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim(), ...(description.trim() ? { description: description.trim() } : {}) });
  };
  return (
    <section className="card eval-form-card" aria-labelledby="new-dataset-h">
      <h2 id="new-dataset-h">New dataset</h2>
      <form className="eval-form" onSubmit={submit} aria-label="New dataset">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </label>
        <label className="eval-json">
          Description <span className="muted">(optional)</span>
          <input value={description} onChange={(e) => setDescription(e.target.value)} maxLength={4000} />
        </label>
        <button type="submit" disabled={create.isPending || !name.trim()}>
          Create dataset
        </button>
      </form>
      <ErrorBanner error={create.error} title="Not created" />
    </section>
  );
}
