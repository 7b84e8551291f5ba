/** One evaluator: its type, its config at a version (every version readable), who made it and when. */
import { getRouteApi, Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { CappedJson } from '../../components/CappedText.tsx';
import { formatTime } from '../runs/runsApi.ts';
import { getEvaluator } from './evaluatorsApi.ts';
import type { EvaluatorDetailSearch } from './search.ts';
import '../datasets/eval-screens.css';

const route = getRouteApi('/_app/evaluators/$evaluatorId');

export function EvaluatorDetailPage() {
  const { evaluatorId } = route.useParams();
  const { version } = route.useSearch() as EvaluatorDetailSearch;
  const navigate = route.useNavigate();
  const current = useQuery({
    queryKey: ['evaluator', evaluatorId],
    queryFn: ({ signal }) => getEvaluator(evaluatorId, undefined, signal),
  });
  const shown = useQuery({
    queryKey: ['evaluator', evaluatorId, version],
    queryFn: ({ signal }) => getEvaluator(evaluatorId, version, signal),
    enabled: version !== undefined,
  });
  const ev = version === undefined ? current.data : shown.data;
  const error = current.error ?? shown.error;
  const latest = current.data?.version ?? 1;
  return (
    <Page title={current.data ? `Evaluator ${current.data.name}` : 'Evaluator'}>
      <p>
        <Link to="/evaluators">← All evaluators</Link>
      </p>
      {error ? (
        <ErrorBanner error={error} />
      ) : !ev ? (
        <Loading label="Loading the evaluator…" />
      ) : (
        <section className="card" aria-labelledby="evaluator-h">
          <h2 id="evaluator-h">
            {ev.name} <span className="muted">version {ev.version}</span>
          </h2>
          <label className="eval-version">
            Version
            <select
              value={ev.version}
              onChange={(e) => {
                const v = Number(e.target.value);
                void navigate({ search: v === latest ? {} : { version: v }, replace: true });
              }}
            >
              {Array.from({ length: latest }, (_, i) => latest - i).map((v) => (
                <option key={v} value={v}>
                  {v}
                  {v === latest ? ' (current)' : ''}
                </option>
              ))}
            </select>
          </label>
          <dl className="kv">
            <div className="kv-row">
              <dt>Type</dt>
              <dd className="mono">{ev.type}</dd>
            </div>
            {ev.description && (
              <div className="kv-row">
                <dt>Description</dt>
                <dd>{ev.description}</dd>
              </div>
            )}
            <div className="kv-row">
              <dt>Id</dt>
              <dd className="mono">{ev.id}</dd>
            </div>
            <div className="kv-row">
              <dt>Version made</dt>
              <dd>
                {formatTime(ev.updated_at)} by {ev.updated_by}
              </dd>
            </div>
            <div className="kv-row">
              <dt>Created</dt>
              <dd>
                {formatTime(ev.created_at)} by {ev.created_by}
              </dd>
            </div>
          </dl>
          <h3>Config</h3>
          <CappedJson value={ev.config} label="Config" filename={`${ev.name}-v${ev.version}.json`} />
        </section>
      )}
    </Page>
  );
}
