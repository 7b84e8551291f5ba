/**
 * Evaluators: the project's list (name, type, current version), and a form that makes one of a
 * built-in or code type (POST /evaluators), its config as JSON, prefilled per type.
 */
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Loading, Page } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { ApiError } from '../../api/errors.ts';
import { formatTime } from '../runs/runsApi.ts';
import { createEvaluator, EVALUATOR_TYPES, listEvaluators } from './evaluatorsApi.ts';
import '../datasets/eval-screens.css';

export function EvaluatorsPage() {
  const evaluators = useQuery({ queryKey: ['evaluators'], queryFn: ({ signal }) => listEvaluators(signal) });
  return (
    <Page title="Evaluators">
      <p className="muted">
        An evaluator scores runs the same way every time; its scores carry its name. Use one from a run’s page
        (“Evaluate this run”).
      </p>
      {evaluators.error ? (
        <ErrorBanner error={evaluators.error} onRetry={() => void evaluators.refetch()} />
      ) : !evaluators.data ? (
        <Loading label="Loading the evaluators…" />
      ) : evaluators.data.length === 0 ? (
        <p className="muted">No evaluators yet.</p>
      ) : (
        <table className="eval-table" aria-label="Evaluators">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Version</th>
              <th scope="col">Updated (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {evaluators.data.map((ev) => (
              <tr key={ev.id}>
                <td>
                  <Link to="/evaluators/$evaluatorId" params={{ evaluatorId: ev.id }}>
                    {ev.name}
                  </Link>
                </td>
                <td className="mono">{ev.type}</td>
                <td className="num">{ev.version}</td>
                <td>{formatTime(ev.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <NewEvaluator />
    </Page>
  );
}

function NewEvaluator() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [type, setType] = useState<string>('exact_match');
  const [config, setConfig] = useState('{}');
  const [bad, setBad] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: createEvaluator,
    onSuccess: (ev) => {
      void qc.invalidateQueries({ queryKey: ['evaluators'] });
      void navigate({ to: '/evaluators/$evaluatorId', params: { evaluatorId: ev.id } });
    },
  });
  const pickType = (t: string) => {
    setType(t);
    const def = EVALUATOR_TYPES.find((x) => x.type === t)?.config ?? {};
    setConfig(JSON.stringify(def, null, 2));
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(config || '{}');
    } catch (err) {
      setBad(`The config is not JSON: ${(err as Error).message}`);
      return;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      setBad('The config must be a JSON object, {…}.');
      return;
    }
    setBad(null);
    const cfg = parsed as Record<string, unknown>;
    create.mutate({ name: name.trim(), type, ...(Object.keys(cfg).length ? { config: cfg } : {}) });
  };
  const fieldError = create.error instanceof ApiError ? create.error : null;
  return (
    <section className="card eval-form-card" aria-labelledby="new-evaluator-h">
      <h2 id="new-evaluator-h">New evaluator</h2>
      <form className="eval-form" onSubmit={submit} aria-label="New evaluator">
        <label>
          Name
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            maxLength={100}
            pattern="[\p{L}\p{N}_\-]+"
            title="Letters, digits, _ and -"
            spellCheck={false}
          />
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => pickType(e.target.value)}>
            {EVALUATOR_TYPES.map((t) => (
              <option key={t.type} value={t.type}>
                {t.label}
              </option>
            ))}
          </select>
        </label>
        <label className="eval-json">
          Config (JSON)
          <textarea
            value={config}
            onChange={(e) => setConfig(e.target.value)}
            rows={6}
            spellCheck={false}
            aria-invalid={bad ? true : undefined}
          />
        </label>
        <button type="submit" disabled={create.isPending || !name.trim()}>
          Create evaluator
        </button>
      </form>
      {bad && (
        <p className="error-banner" role="alert">
          {bad}
        </p>
      )}
      <ErrorBanner error={fieldError ?? create.error} title="Not created" />
    </section>
  );
}
