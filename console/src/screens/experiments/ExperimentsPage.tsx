/**
 * Experiments: the project's list (status, progress) and a form that starts one: a dataset, two
 * versions of an interaction as the variants, the evaluators that score every run.
 */
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { formatTime } from '../runs/runsApi.ts';
import { listDatasets } from '../datasets/datasetsApi.ts';
import { listEvaluators } from '../evaluators/evaluatorsApi.ts';
import { api as interactionsApi } from '../interactions/model.ts';
import { ENDED, listExperiments, startExperiment } from './experimentsApi.ts';
import '../datasets/eval-screens.css';
import './experiments.css';

export function ExperimentsPage() {
  const experiments = useQuery({
    queryKey: ['experiments'],
    queryFn: ({ signal }) => listExperiments(signal),
    refetchInterval: (q) => (q.state.data?.some((x) => !ENDED.includes(x.status)) ? 1000 : false),
  });
  return (
    <Page title="Experiments">
      <p className="muted">
        Every item of a dataset through every variant, each run scored by the evaluators: compare quality, latency and
        cost before publishing.
      </p>
      {experiments.error ? (
        <ErrorBanner error={experiments.error} onRetry={() => void experiments.refetch()} />
      ) : !experiments.data ? (
        <Loading label="Loading the experiments…" />
      ) : experiments.data.length === 0 ? (
        <p className="muted">No experiments yet.</p>
      ) : (
        <table className="eval-table" aria-label="Experiments">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col">Variants</th>
              <th scope="col">Started (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {experiments.data.map((x) => (
              <tr key={x.id}>
                <td>
                  <Link to="/experiments/$experimentId" params={{ experimentId: x.id }}>
                    {x.name ?? x.id}
                  </Link>
                </td>
                <td>{x.status}</td>
                <td className="num">
                  {x.progress.done} / {x.progress.total}
                </td>
                <td>{x.variants.map((v) => v.name).join(', ')}</td>
                <td>{formatTime(x.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <NewExperiment />
    </Page>
  );
}

function NewExperiment() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const datasets = useQuery({ queryKey: ['datasets'], queryFn: ({ signal }) => listDatasets(signal) });
  const evaluators = useQuery({ queryKey: ['evaluators'], queryFn: ({ signal }) => listEvaluators(signal) });
  const interactions = useQuery({ queryKey: ['interactions'], queryFn: () => interactionsApi.interactions() });
  const [name, setName] = useState('');
  const [dataset, setDataset] = useState('');
  const [interaction, setInteraction] = useState('');
  const [versionA, setVersionA] = useState('');
  const [versionB, setVersionB] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const ix = interaction || interactions.data?.[0]?.id || '';
  const versions = useQuery({
    queryKey: ['interaction-versions', ix],
    queryFn: () => interactionsApi.versions(ix),
    enabled: !!ix,
  });
  const vs = versions.data ?? [];
  const a = versionA || vs[1]?.id || vs[0]?.id || '';
  const b = versionB || vs[0]?.id || '';
  const ds = dataset || datasets.data?.[0]?.id || '';
  const label = (id: string) => {
    const v = vs.find((x) => x.id === id);
    return v ? `${v.name} v${v.version}${v.status === 'draft' ? ' (draft)' : ''}` : id;
  };
  const start = useMutation({
    mutationFn: startExperiment,
    onSuccess: (x) => {
      void qc.invalidateQueries({ queryKey: ['experiments'] });
      void navigate({ to: '/experiments/$experimentId', params: { experimentId: x.id } });
    },
  });
  const ready = !!ds && !!a && !!b && a !== b;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!ready) return;
    const la = label(a);
    const lb = label(b);
    start.mutate({
      ...(name.trim() ? { name: name.trim() } : {}),
      dataset: ds,
      variants: [
        { name: la, interaction: a },
        { name: lb === la ? `${lb} (2)` : lb, interaction: b },
      ],
      ...(picked.length ? { evaluators: picked } : {}),
    });
  };
  const loadError = datasets.error ?? evaluators.error ?? interactions.error ?? versions.error;
  return (
    <section className="card eval-form-card" aria-labelledby="new-experiment-h">
      <h2 id="new-experiment-h">New experiment</h2>
      <ErrorBanner error={loadError} />
      <form className="eval-form" onSubmit={submit} aria-label="New experiment">
        <label>
          Name <span className="muted">(optional)</span>
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
        </label>
        <label>
          Dataset
          <select value={ds} onChange={(e) => setDataset(e.target.value)}>
            {(datasets.data ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} (v{d.version}, {d.item_count} items)
              </option>
            ))}
          </select>
        </label>
        <label>
          Interaction
          <select
            value={ix}
            onChange={(e) => {
              setInteraction(e.target.value);
              setVersionA('');
              setVersionB('');
            }}
          >
            {(interactions.data ?? []).map((x) => (
              <option key={x.id} value={x.id}>
                {x.name}
              </option>
            ))}
          </select>
        </label>
        {(
          [
            ['Variant A', a, setVersionA],
            ['Variant B', b, setVersionB],
          ] as const
        ).map(([name, value, set]) => (
          <label key={name}>
            {name}
            <select value={value} onChange={(e) => set(e.target.value)}>
              {vs.map((v) => (
                <option key={v.id} value={v.id}>
                  {label(v.id)}
                </option>
              ))}
            </select>
          </label>
        ))}
        <fieldset className="eval-full experiment-evaluators">
          <legend>Evaluators</legend>
          {(evaluators.data ?? []).length === 0 && <p className="muted">No evaluators: runs are made, not scored.</p>}
          {(evaluators.data ?? []).map((ev) => (
            <label key={ev.id} className="inline-check">
              <input
                type="checkbox"
                checked={picked.includes(ev.id)}
                onChange={(e) => setPicked((p) => (e.target.checked ? [...p, ev.id] : p.filter((x) => x !== ev.id)))}
              />
              {ev.name} <span className="muted">({ev.type})</span>
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={start.isPending || !ready}>
          Start experiment
        </button>
        {a && b && a === b && (
          <p className="muted eval-full" role="status">
            Pick two different versions.
          </p>
        )}
        {datasets.data?.length === 0 && (
          <p className="muted eval-full">
            No datasets yet: <Link to="/datasets">make one</Link>.
          </p>
        )}
      </form>
      <ErrorBanner error={start.error} title="Not started" />
    </section>
  );
}
