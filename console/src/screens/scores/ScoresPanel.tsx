/**
 * The run detail's scores: thumbs up or down, a number under a name, a comment (POST
 * /runs/:id/scores, source human); every score of the run with who gave it and when; deleting one's
 * own. The latest score of each name is the run's (GET /runs/:id `scores`).
 */
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { RowAction } from '../../components/RowAction.tsx';
import { formatTime } from '../runs/runsApi.ts';
import { addScore, byWhom, deleteScore, formatScore, isMine, runScores, SCORE_NAME, type Score } from './scoresApi.ts';
import './scores.css';

const THUMBS = 'thumbs';

export function ScoresPanel({ runId }: { runId: string }) {
  const qc = useQueryClient();
  const scores = useQuery({ queryKey: ['run', runId, 'scores'], queryFn: ({ signal }) => runScores(runId, signal) });
  const [comment, setComment] = useState('');
  const [name, setName] = useState('quality');
  const [value, setValue] = useState('');
  const [done, setDone] = useState('');
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['run', runId] });
    void qc.invalidateQueries({ queryKey: ['runs'] });
  };
  const add = useMutation({
    mutationFn: (v: { name: string; value: number | boolean }) =>
      addScore(runId, { ...v, source: 'human', ...(comment.trim() ? { comment: comment.trim() } : {}) }),
    onSuccess: (s) => {
      setDone(`Saved ${s.name} = ${formatScore(s.value)}.`);
      setComment('');
      if (typeof s.value === 'number') setValue('');
      refresh();
    },
    onMutate: () => setDone(''),
  });
  const remove = useMutation({
    mutationFn: (s: Score) => deleteScore(runId, s.id),
    onSuccess: (_r, s) => {
      setDone(`Deleted the score ${s.name} = ${formatScore(s.value)}.`);
      refresh();
    },
    onMutate: () => setDone(''),
  });

  const nameOk = SCORE_NAME.test(name.trim());
  const num = value.trim() === '' ? NaN : Number(value);
  const submitNumber = (e: FormEvent) => {
    e.preventDefault();
    if (!nameOk || !Number.isFinite(num)) return;
    add.mutate({ name: name.trim(), value: num });
  };
  const latestThumb = [...(scores.data ?? [])].reverse().find((s) => s.name === THUMBS && isMine(s))?.value;

  return (
    <section className="card scores-panel" aria-labelledby="run-scores-h">
      <h2 id="run-scores-h">Scores</h2>
      <div className="score-form">
        <label className="score-comment">
          Comment <span className="muted">(optional, sent with the next score)</span>
          <textarea value={comment} onChange={(e) => setComment(e.target.value)} rows={2} maxLength={4000} />
        </label>
        <div className="score-thumbs" role="group" aria-label="Thumbs">
          <button
            type="button"
            className="secondary"
            aria-pressed={latestThumb === true}
            disabled={add.isPending}
            onClick={() => add.mutate({ name: THUMBS, value: true })}
          >
            <span aria-hidden="true">👍</span> Thumbs up
          </button>
          <button
            type="button"
            className="secondary"
            aria-pressed={latestThumb === false}
            disabled={add.isPending}
            onClick={() => add.mutate({ name: THUMBS, value: false })}
          >
            <span aria-hidden="true">👎</span> Thumbs down
          </button>
        </div>
        <form className="score-number" onSubmit={submitNumber} aria-label="Numeric score">
          <label>
            Score name
            <input
              value={name}
              onChange={(e) => setName(e.target.value)}
              aria-invalid={!nameOk || undefined}
              aria-describedby="score-name-help"
              maxLength={100}
              spellCheck={false}
            />
          </label>
          <label>
            Score value
            <input type="number" step="any" value={value} onChange={(e) => setValue(e.target.value)} />
          </label>
          <button type="submit" disabled={add.isPending || !nameOk || !Number.isFinite(num)}>
            Add score
          </button>
          <p id="score-name-help" className="muted score-help">
            Letters, digits, _ and -; search runs with <code>scores.{nameOk ? name.trim() : 'name'}:[0.8 TO *]</code>.
          </p>
        </form>
      </div>
      <p className="muted" role="status">
        {done}
      </p>
      <ErrorBanner error={add.error ?? remove.error} title="The score was not saved" />
      {scores.error ? (
        <ErrorBanner error={scores.error} onRetry={() => void scores.refetch()} />
      ) : !scores.data ? (
        <p className="muted">Loading the scores…</p>
      ) : scores.data.length === 0 ? (
        <p className="muted">No scores yet.</p>
      ) : (
        <table className="scores-table" aria-label="Scores of the run">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Source</th>
              <th scope="col">By</th>
              <th scope="col">When (UTC)</th>
              <th scope="col">Comment</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {scores.data.map((s) => (
              <tr key={s.id}>
                <td className="mono">{s.name}</td>
                <td>
                  <ScoreValueView value={s.value} />
                </td>
                <td>{s.source === 'evaluator' && s.evaluator ? `evaluator ${s.evaluator}` : s.source}</td>
                <td>{byWhom(s)}</td>
                <td>{formatTime(s.created_at)}</td>
                <td className="score-comment-cell">{s.comment ?? ''}</td>
                <td>
                  {isMine(s) && (
                    <RowAction
                      label="Delete"
                      name={`Delete the score ${s.name} = ${formatScore(s.value)} of ${formatTime(s.created_at)}`}
                      look="link"
                      disabled={remove.isPending}
                      onClick={() => remove.mutate(s)}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function ScoreValueView({ value }: { value: Score['value'] | undefined }) {
  if (value === undefined) return null;
  if (typeof value === 'boolean')
    return (
      <span className={value ? 'score-up' : 'score-down'}>
        <span aria-hidden="true">{value ? '👍 ' : '👎 '}</span>
        {String(value)}
      </span>
    );
  return <span className={typeof value === 'number' ? 'num' : undefined}>{String(value)}</span>;
}
