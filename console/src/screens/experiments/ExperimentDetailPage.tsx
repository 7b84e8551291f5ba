/**
 * One experiment: its status and progress (polled until it ends), cancel, the comparison table
 * (per variant: each evaluator's mean, pass rate and count, latency p50/p95, tokens, cost), the
 * differences with another experiment, and the items with two variants' answers side by side, what
 * differs marked, a failed one run again.
 */
import { getRouteApi, Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { formatTime } from '../runs/runsApi.ts';
import {
  answerText,
  cancelExperiment,
  ENDED,
  experimentItems,
  fmt,
  getExperiment,
  ITEMS_PAGE,
  pct,
  rerunItem,
  type Cell,
  type Experiment,
} from './experimentsApi.ts';
import { wordDiff, type Piece } from './diff.ts';
import type { ExperimentDetailSearch } from './search.ts';
import { CompareExperiments } from './CompareExperiments.tsx';
import { RowAction } from '../../components/RowAction.tsx';
import '../datasets/eval-screens.css';
import './experiments.css';

const route = getRouteApi('/_app/experiments/$experimentId');

export function ExperimentDetailPage() {
  const { experimentId } = route.useParams();
  const search = route.useSearch() as ExperimentDetailSearch;
  const navigate = route.useNavigate();
  const qc = useQueryClient();
  const experiment = useQuery({
    queryKey: ['experiment', experimentId],
    queryFn: ({ signal }) => getExperiment(experimentId, signal),
    refetchInterval: (q) => (q.state.data && ENDED.includes(q.state.data.status) ? false : 1000),
  });
  const x = experiment.data;
  const cancel = useMutation({
    mutationFn: () => cancelExperiment(experimentId),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['experiment', experimentId] }),
  });
  const running = x && !ENDED.includes(x.status);
  return (
    <Page
      title={x ? `Experiment ${x.name ?? x.id}` : 'Experiment'}
      actions={
        running && (
          <button type="button" className="secondary" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
            Cancel the experiment
          </button>
        )
      }
    >
      <p>
        <Link to="/experiments">← All experiments</Link>
      </p>
      <ErrorBanner error={cancel.error} title="Not canceled" />
      {experiment.error ? (
        <ErrorBanner error={experiment.error} onRetry={() => void experiment.refetch()} />
      ) : !x ? (
        <Loading label="Loading the experiment…" />
      ) : (
        <>
          <Progress x={x} />
          <Figures x={x} />
          <CompareExperiments
            x={x}
            other={search.with}
            onPick={(other) => void navigate({ search: { ...search, with: other }, replace: true })}
          />
          <SideBySide
            x={x}
            search={search}
            onSearch={(s) => void navigate({ search: { ...search, ...s }, replace: true })}
          />
        </>
      )}
    </Page>
  );
}

function Progress({ x }: { x: Experiment }) {
  const p = x.progress;
  return (
    <section className="card" aria-labelledby="progress-h">
      <h2 id="progress-h">Progress</h2>
      <p role="status">
        {x.status}: {p.done} of {p.total} runs done ({p.completed} completed, {p.failed} failed
        {p.canceled ? `, ${p.canceled} canceled` : ''})
      </p>
      <progress className="experiment-progress" max={p.total || 1} value={p.done} aria-label="Runs done" />
      {x.error && (
        <p className="error-banner" role="alert">
          {x.error}
        </p>
      )}
      <p className="muted">
        Dataset{' '}
        <Link to="/datasets/$datasetId" params={{ datasetId: x.dataset.id }} search={{ version: x.dataset.version }}>
          version {x.dataset.version}
        </Link>
        ; started {formatTime(x.created_at)} UTC{x.ended_at ? `, ended ${formatTime(x.ended_at)} UTC` : ''}.
      </p>
    </section>
  );
}

function Figures({ x }: { x: Experiment }) {
  const names = x.evaluators.map((e) => e.name);
  return (
    <section className="card" aria-labelledby="figures-h">
      <h2 id="figures-h">Comparison</h2>
      <div className="table-scroll">
        <table className="eval-table" aria-label="Figures per variant">
          <thead>
            <tr>
              <th scope="col">Variant</th>
              {names.map((n) => (
                <th scope="col" key={n}>
                  {n}: mean (pass rate, count)
                </th>
              ))}
              <th scope="col">Runs completed / failed</th>
              <th scope="col">Latency p50 / p95 (ms)</th>
              <th scope="col">Tokens</th>
              <th scope="col">Cost (USD)</th>
            </tr>
          </thead>
          <tbody>
            {x.variants.map((v) => (
              <tr key={v.name}>
                <th scope="row">{v.name}</th>
                {names.map((n) => {
                  const s = v.scores?.[n];
                  return (
                    <td key={n} className="num">
                      {s
                        ? `${fmt(s.mean)} (${pct(s.pass_rate)}, ${s.count}${s.errors ? `, ${s.errors} errors` : ''})`
                        : '—'}
                    </td>
                  );
                })}
                <td className="num">{v.runs ? `${v.runs.completed} / ${v.runs.failed}` : '—'}</td>
                <td className="num">
                  {fmt(v.latency?.p50, 0)} / {fmt(v.latency?.p95, 0)}
                </td>
                <td className="num">{fmt(v.tokens)}</td>
                <td className="num">{v.cost === undefined ? '—' : v.cost.toFixed(6)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function SideBySide({
  x,
  search,
  onSearch,
}: {
  x: Experiment;
  search: ExperimentDetailSearch;
  onSearch: (s: ExperimentDetailSearch) => void;
}) {
  const names = x.variants.map((v) => v.name);
  const a = search.a && names.includes(search.a) ? search.a : names[0];
  const b = search.b && names.includes(search.b) ? search.b : (names[1] ?? names[0]);
  const offset = search.offset ?? 0;
  const items = useQuery({
    queryKey: ['experiment', x.id, 'items', offset, x.progress.done],
    queryFn: ({ signal }) => experimentItems(x.id, offset, signal),
    placeholderData: (prev) => prev,
  });
  const pick = (which: 'a' | 'b', name: string) => onSearch({ [which]: name });
  const qc = useQueryClient();
  const rerun = useMutation({
    mutationFn: (item: string) => rerunItem(x.id, item),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['experiment', x.id] }),
  });
  return (
    <section className="card" aria-labelledby="items-h">
      <h2 id="items-h">Items side by side</h2>
      <div className="eval-form">
        <label>
          Left
          <select value={a} onChange={(e) => pick('a', e.target.value)}>
            {names.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
        <label>
          Right
          <select value={b} onChange={(e) => pick('b', e.target.value)}>
            {names.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBanner error={rerun.error} title="Not run again" />
      {items.error ? (
        <ErrorBanner error={items.error} onRetry={() => void items.refetch()} />
      ) : !items.data ? (
        <Loading label="Loading the items…" />
      ) : items.data.length === 0 ? (
        <p className="muted">No items.</p>
      ) : (
        <>
          <div className="table-scroll">
            <table className="eval-table side-by-side" aria-label="Answers side by side">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Data</th>
                  <th scope="col">Expected</th>
                  <th scope="col">{a}</th>
                  <th scope="col">{b}</th>
                </tr>
              </thead>
              <tbody>
                {items.data.map((it, i) => (
                  <tr key={it.item}>
                    <td className="num">
                      {offset + i + 1}
                      {Object.values(it.runs).some((c) => c.status === 'failed') && x.status !== 'canceled' && (
                        <>
                          {' '}
                          <RowAction
                            label="Run again"
                            name={`Run again item ${offset + i + 1}`}
                            disabled={rerun.isPending}
                            onClick={() => rerun.mutate(it.item)}
                          />
                        </>
                      )}
                    </td>
                    <td className="mono eval-wrap">{JSON.stringify(it.data)}</td>
                    <td className="mono eval-wrap">
                      {it.expected === undefined
                        ? ''
                        : typeof it.expected === 'string'
                          ? it.expected
                          : JSON.stringify(it.expected)}
                    </td>
                    <AnswerPair left={it.runs[a]} right={it.runs[b]} />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav className="eval-pager" aria-label="Pages of items">
            <button
              type="button"
              className="secondary"
              disabled={offset === 0}
              onClick={() => onSearch({ offset: Math.max(0, offset - ITEMS_PAGE) || undefined })}
            >
              Previous page
            </button>
            <span className="muted">
              Items {offset + 1}–{offset + items.data.length}
            </span>
            <button
              type="button"
              className="secondary"
              disabled={items.data.length < ITEMS_PAGE}
              onClick={() => onSearch({ offset: offset + ITEMS_PAGE })}
            >
              Next page
            </button>
          </nav>
        </>
      )}
    </section>
  );
}

/** The two cells of an item: each answer (fetched from its run) with the words that differ marked, and its scores. */
function AnswerPair({ left, right }: { left: Cell | undefined; right: Cell | undefined }) {
  const l = useAnswer(left);
  const r = useAnswer(right);
  const diff = l !== undefined && r !== undefined ? wordDiff(l, r) : undefined;
  return (
    <>
      <AnswerCell cell={left} pieces={diff?.left} />
      <AnswerCell cell={right} pieces={diff?.right} />
    </>
  );
}

function useAnswer(cell: Cell | undefined): string | undefined {
  const run = cell?.status === 'completed' ? cell.run : undefined;
  const q = useQuery({
    queryKey: ['run', run, 'answer'],
    queryFn: ({ signal }) => answerText(run!, signal),
    enabled: !!run,
    staleTime: Infinity,
  });
  return q.data;
}

function AnswerCell({ cell, pieces }: { cell: Cell | undefined; pieces: Piece[] | undefined }) {
  if (!cell) return <td className="muted">not run</td>;
  const scores = Object.entries(cell.scores);
  return (
    <td>
      {cell.status !== 'completed' ? (
        <p className="muted">
          {cell.status}
          {cell.error ? `: ${cell.error}` : ''}
        </p>
      ) : (
        <p className="answer">
          {pieces
            ? pieces.map((p, i) => (p.changed ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))
            : '…'}
        </p>
      )}
      {scores.length > 0 && (
        <p className="muted">
          {scores.map(([n, s]) => `${n} ${'error' in s ? `error: ${s.error}` : String(s.value)}`).join(' · ')}
        </p>
      )}
      {cell.run && (
        <Link to="/runs/$runId" params={{ runId: cell.run }}>
          the run
        </Link>
      )}
    </td>
  );
}
