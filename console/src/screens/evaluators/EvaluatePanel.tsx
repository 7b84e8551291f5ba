/**
 * "Evaluate this run" on the run detail: pick an evaluator, give the expected answer when it
 * needs one, and POST /evaluators/:id/evaluate. The score lands on the run (the scores panel
 * shows it); an evaluator's error or a missing score is said here.
 */
import { useState, type FormEvent } from 'react';
import { Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { evaluateRun, listEvaluators, type Evaluation } from './evaluatorsApi.ts';
import '../scores/scores.css';

export function EvaluatePanel({ runId }: { runId: string }) {
  const qc = useQueryClient();
  const evaluators = useQuery({ queryKey: ['evaluators'], queryFn: ({ signal }) => listEvaluators(signal) });
  const [chosen, setChosen] = useState('');
  const [expected, setExpected] = useState('');
  const evaluate = useMutation({
    mutationFn: (id: string) => evaluateRun(id, { run: runId, ...(expected !== '' ? { expected } : {}) }),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['run', runId] });
      void qc.invalidateQueries({ queryKey: ['runs'] });
    },
  });
  const list = evaluators.data ?? [];
  const id = chosen || list[0]?.id || '';
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (id) evaluate.mutate(id);
  };
  return (
    <section className="card" aria-labelledby="run-evaluate-h">
      <h2 id="run-evaluate-h">Evaluate this run</h2>
      {evaluators.error ? (
        <ErrorBanner error={evaluators.error} onRetry={() => void evaluators.refetch()} />
      ) : !evaluators.data ? (
        <p className="muted">Loading the evaluators…</p>
      ) : list.length === 0 ? (
        <p className="muted">
          No evaluators yet: <Link to="/evaluators">make one</Link>.
        </p>
      ) : (
        <form className="evaluate-form" onSubmit={submit} aria-label="Evaluate this run">
          <label>
            Evaluator
            <select value={id} onChange={(e) => setChosen(e.target.value)}>
              {list.map((ev) => (
                <option key={ev.id} value={ev.id}>
                  {ev.name} ({ev.type}, v{ev.version})
                </option>
              ))}
            </select>
          </label>
          <label>
            Expected <span className="muted">(text, optional)</span>
            <input value={expected} onChange={(e) => setExpected(e.target.value)} />
          </label>
          <button type="submit" disabled={evaluate.isPending}>
            {evaluate.isPending ? 'Evaluating…' : 'Evaluate'}
          </button>
        </form>
      )}
      <p role="status" className="muted">
        {evaluate.data ? outcome(evaluate.data) : ''}
      </p>
      <ErrorBanner error={evaluate.error} title="Not evaluated" />
    </section>
  );
}

function outcome(e: Evaluation): string {
  if (e.error) return `The evaluator gave no score: ${e.error.message}`;
  if (!e.score) return 'The evaluator gave no score.';
  return `Scored ${e.score.name} = ${String(e.score.value)}${e.reason ? ` (${e.reason})` : ''} with version ${e.version}.`;
}
