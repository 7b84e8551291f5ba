/**
 * Scores in the runs explorer: a column per chosen score name (the run's latest value of it), the
 * picker that chooses the names, and a facet group per name (its values with their counts, from
 * run search's `scores.<name>` facet) whose chips filter the list.
 *
 * Run search answers carry no scores, so a score cell reads its run's scores (GET
 * /runs/:id/scores), once per run and only for the rows on screen (the table is virtualised);
 * the run detail shares that cache.
 */
import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { columnHelper, type DataColumn } from '../../components/DataTable.tsx';
import { SCORE_NAME } from '../runs/search.ts';
import type { Bucket, RunRef } from '../runs/runsApi.ts';
import { runScores, type Score } from './scoresApi.ts';
import { ScoreValueView } from './ScoresPanel.tsx';
import './scores.css';

const col = columnHelper<RunRef>();

export const scoreColumn = (name: string): DataColumn<RunRef> =>
  col.display({
    id: `score:${name}`,
    header: () => (
      <span>
        <span className="visually-hidden">Score </span>
        {name}
      </span>
    ),
    cell: (c) => <ScoreCell run={c.row.original.id} name={name} />,
  });

function ScoreCell({ run, name }: { run: string; name: string }) {
  const scores = useQuery({
    queryKey: ['run', run, 'scores'],
    queryFn: ({ signal }) => runScores(run, signal),
    staleTime: 60_000,
  });
  if (scores.error)
    return (
      <span className="muted" title="The scores could not be read">
        ?
      </span>
    );
  const latest = scores.data?.findLast((s) => s.name === name);
  return <ScoreValueView value={latest?.value} />;
}

/** The score names this tab has seen (on the runs it read), to suggest in the picker. */
function useKnownNames(): string[] {
  const qc = useQueryClient();
  const names = new Set<string>();
  for (const [key, data] of qc.getQueriesData<Score[]>({ queryKey: ['run'] }))
    if (key[2] === 'scores' && Array.isArray(data)) for (const s of data) names.add(s.name);
  return [...names].sort();
}

export function ScoreColumnsPicker({ names, onChange }: { names: string[]; onChange: (names: string[]) => void }) {
  const [text, setText] = useState('');
  const known = useKnownNames().filter((n) => !names.includes(n));
  const name = text.trim();
  const ok = SCORE_NAME.test(name) && !names.includes(name) && names.length < 8;
  const add = (e: FormEvent) => {
    e.preventDefault();
    if (ok) {
      onChange([...names, name]);
      setText('');
    }
  };
  return (
    <div className="score-columns" role="group" aria-labelledby="score-columns-h">
      <p id="score-columns-h" className="score-columns-title">
        Score columns
      </p>
      {names.map((n) => (
        <label key={n}>
          <input type="checkbox" checked onChange={() => onChange(names.filter((x) => x !== n))} />
          {n}
        </label>
      ))}
      <div className="score-columns-add">
        <input
          aria-label="Score name"
          list="score-names-known"
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') add(e);
          }}
          placeholder="quality"
          maxLength={100}
          spellCheck={false}
        />
        <datalist id="score-names-known">
          {known.map((n) => (
            <option key={n} value={n} />
          ))}
        </datalist>
        <button type="button" className="secondary" disabled={!ok} onClick={add}>
          Add score column
        </button>
      </div>
    </div>
  );
}

/** A facet value as the URL keeps it (JSON), and as people read it. */
const valueKey = (b: Bucket) => JSON.stringify(b._id);
const valueLabel = (json: string) => {
  const v = JSON.parse(json) as unknown;
  return typeof v === 'string' ? v : String(v);
};

export function ScoreFacets({
  names,
  facets,
  chosen,
  onToggle,
}: {
  names: string[];
  facets?: Record<string, Bucket[]>;
  chosen?: Record<string, string[]>;
  onToggle: (name: string, value: string) => void;
}) {
  const active = Object.entries(chosen ?? {}).flatMap(([n, values]) => values.map((v) => ({ n, v })));
  if (!names.length && !active.length) return null;
  return (
    <>
      {active.length > 0 && (
        <div className="facet-active">
          <h2 className="facet-title">Score filters</h2>
          <ul className="chips">
            {active.map(({ n, v }) => (
              <li key={`${n}:${v}`}>
                <button type="button" className="chip chip-active" onClick={() => onToggle(n, v)}>
                  <span className="visually-hidden">Remove filter </span>
                  {n}: {valueLabel(v)} <span aria-hidden="true">×</span>
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      {names.map((n) => {
        const buckets = facets?.[n];
        return (
          <div className="facet-group" key={n}>
            <h2 className="facet-title">Score: {n}</h2>
            {!buckets ? (
              <p className="muted">Counting…</p>
            ) : buckets.length === 0 ? (
              <p className="muted">No run has this score.</p>
            ) : (
              <ul className="chips">
                {buckets.map((b) => {
                  const v = valueKey(b);
                  const on = chosen?.[n]?.includes(v) ?? false;
                  return (
                    <li key={v}>
                      <button
                        type="button"
                        className={`chip${on ? ' chip-on' : ''}`}
                        aria-pressed={on}
                        onClick={() => onToggle(n, v)}
                        title={`${n}: ${valueLabel(v)}`}
                      >
                        <span className="visually-hidden">score {n}: </span>
                        <span className="chip-label">{valueLabel(v)}</span>{' '}
                        <span className="chip-count">{b.count.toLocaleString()}</span>
                        <span className="visually-hidden"> runs</span>
                      </button>
                    </li>
                  );
                })}
              </ul>
            )}
          </div>
        );
      })}
    </>
  );
}
