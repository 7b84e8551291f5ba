/**
 * An experiment beside another one of the project: pick it, and per variant name both have, the
 * other's figures minus this one's (each shared evaluator's mean and pass rate, latency p50,
 * tokens, cost), as GET /experiments/:id/compare computes them.
 */
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import {
  compareExperiments,
  listExperiments,
  signed,
  signedPoints,
  type Comparison,
  type Experiment,
} from './experimentsApi.ts';

const label = (x: Experiment) => x.name ?? x.id;

export function CompareExperiments({
  x,
  other,
  onPick,
}: {
  x: Experiment;
  other: string | undefined;
  onPick: (other: string | undefined) => void;
}) {
  const list = useQuery({ queryKey: ['experiments'], queryFn: ({ signal }) => listExperiments(signal) });
  const others = (list.data ?? []).filter((e) => e.id !== x.id);
  const cmp = useQuery({
    queryKey: ['experiment', x.id, 'compare', other, x.progress.done],
    queryFn: ({ signal }) => compareExperiments(x.id, other!, signal),
    enabled: !!other,
  });
  return (
    <section className="card" aria-labelledby="compare-h">
      <h2 id="compare-h">Compare with another experiment</h2>
      {list.error ? (
        <ErrorBanner error={list.error} onRetry={() => void list.refetch()} />
      ) : !list.data ? (
        <Loading label="Loading the experiments…" />
      ) : others.length === 0 ? (
        <p className="muted">No other experiment in this project yet.</p>
      ) : (
        <div className="eval-form">
          <label>
            Compare with
            <select value={other ?? ''} onChange={(e) => onPick(e.target.value || undefined)}>
              <option value="">(none)</option>
              {others.map((e) => (
                <option key={e.id} value={e.id}>
                  {label(e)} ({e.status})
                </option>
              ))}
            </select>
          </label>
        </div>
      )}
      {other &&
        (cmp.error ? (
          <ErrorBanner error={cmp.error} onRetry={() => void cmp.refetch()} />
        ) : !cmp.data ? (
          <Loading label="Comparing…" />
        ) : (
          <Differences cmp={cmp.data} />
        ))}
    </section>
  );
}

function Differences({ cmp }: { cmp: Comparison }) {
  const [a, b] = cmp.experiments;
  const variants = Object.entries(cmp.deltas);
  const evaluators = [...new Set(variants.flatMap(([, d]) => Object.keys(d.scores)))].sort();
  return (
    <>
      <p>
        <Link to="/experiments/$experimentId" params={{ experimentId: b.id }}>
          {label(b)}
        </Link>{' '}
        minus {label(a)}, per variant both have.
        {!cmp.same_dataset && (
          <strong> The two ran on different datasets or dataset versions: read the differences with care.</strong>
        )}
      </p>
      {variants.length === 0 ? (
        <p className="muted">The two experiments have no variant name in common.</p>
      ) : (
        <div className="table-scroll">
          <table className="eval-table" aria-label={`Differences with ${label(b)}`}>
            <thead>
              <tr>
                <th scope="col">Variant</th>
                {evaluators.map((n) => (
                  <th scope="col" key={n}>
                    {n}: mean (pass rate)
                  </th>
                ))}
                <th scope="col">Latency p50 (ms)</th>
                <th scope="col">Tokens</th>
                <th scope="col">Cost (USD)</th>
              </tr>
            </thead>
            <tbody>
              {variants.map(([name, d]) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  {evaluators.map((n) => {
                    const s = d.scores[n];
                    return (
                      <td key={n} className="num">
                        {s ? `${signed(s.mean)} (${signedPoints(s.pass_rate)})` : '—'}
                      </td>
                    );
                  })}
                  <td className="num">{signed(d.latency_p50, 0)}</td>
                  <td className="num">{signed(d.tokens, 0)}</td>
                  <td className="num">{signed(d.cost, 6)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
