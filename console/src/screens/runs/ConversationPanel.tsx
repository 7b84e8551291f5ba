/**
 * The conversation a run belongs to, turn by turn: each turn is a run, what it added (the user's
 * message, the tool results) and what the model answered (text, tool calls). Links go to the
 * previous run and to the runs that continue this one.
 */
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { Loading } from '../../components/Page.tsx';
import { MessageList } from '../../components/conversation/MessageList.tsx';
import { answerMessage, asMessage, type Message } from '../../components/conversation/types.ts';
import { fetchEarlier, fetchNextRuns, MAX_NEXT, type TurnRun } from './conversationApi.ts';
import type { RunRef } from './runsApi.ts';

/** Whether a run is a turn of a conversation: it continues a run, asked for tools, or was continued. */
export const inConversation = (run: TurnRun, next: RunRef[] | undefined) =>
  !!run.previous_run || (Array.isArray(run.tool_use) && run.tool_use.length > 0) || (next?.length ?? 0) > 0;

/** The runs that continue `runId` (GET /runs?previous_run=). */
export const useNextRuns = (runId: string) =>
  useQuery({ queryKey: ['run', runId, 'next'], queryFn: () => fetchNextRuns(runId) });

function turnMessages(run: TurnRun): Message[] {
  const input = Array.isArray(run.prompt) ? run.prompt.map(asMessage).filter((m): m is Message => !!m) : [];
  const answer = answerMessage(run);
  return answer ? [...input, answer] : input;
}

function ConversationLinks({ run }: { run: TurnRun }) {
  const next = useNextRuns(run.id);
  return (
    <nav className="conversation-links" aria-label="Conversation">
      <span>
        Previous run:{' '}
        {run.previous_run ? (
          <Link to="/runs/$runId" params={{ runId: run.previous_run }} aria-label={`Previous run ${run.previous_run}`}>
            {run.previous_run}
          </Link>
        ) : (
          <span className="muted">none (the first turn)</span>
        )}
      </span>
      <span>
        Next run:{' '}
        {next.error ? (
          <span className="status-failed">could not be listed</span>
        ) : !next.data ? (
          <span className="muted">…</span>
        ) : next.data.length === 0 ? (
          <span className="muted">none yet</span>
        ) : (
          next.data.map((n, i) => (
            <span key={n.id}>
              {i > 0 && ', '}
              <Link to="/runs/$runId" params={{ runId: n.id }} aria-label={`Next run ${n.id}`}>
                {n.id}
              </Link>
            </span>
          ))
        )}
        {next.data?.length === MAX_NEXT && <span className="muted"> (and more)</span>}
      </span>
    </nav>
  );
}

function Turn({ run, n, current }: { run: TurnRun; n: number; current: boolean }) {
  const title = `Turn ${n}`;
  return (
    <li className={`turn${current ? ' is-current' : ''}`}>
      <section aria-label={`${title}, run ${run.id}`}>
        <h3 className="turn-head">
          {title}{' '}
          {current ? (
            <span className="muted">this run</span>
          ) : (
            <Link to="/runs/$runId" params={{ runId: run.id }}>
              {run.id}
            </Link>
          )}{' '}
          <span className={`run-status status-${run.status}`}>{run.status}</span>
        </h3>
        <MessageList messages={turnMessages(run)} label={`${title}, message`} />
        {run.error?.message && (
          <p className="status-failed">
            {run.error.code} {run.error.message}
          </p>
        )}
      </section>
    </li>
  );
}

export function ConversationPanel({ run }: { run: TurnRun }) {
  // The earlier turns are read once; this run's turn is the live run (it may still be streaming).
  const earlier = useQuery({
    queryKey: ['run-earlier', run.previous_run ?? null],
    queryFn: () => fetchEarlier(run.previous_run),
  });
  return (
    <section className="card" aria-labelledby="run-conversation-h">
      <h2 id="run-conversation-h">Conversation</h2>
      <ConversationLinks run={run} />
      {earlier.error ? (
        <ErrorBanner error={earlier.error} onRetry={() => void earlier.refetch()} title="Earlier turns" />
      ) : !earlier.data ? (
        <Loading label="Loading the earlier turns…" />
      ) : (
        <>
          {earlier.data.cut && (
            <p className="muted">
              Earlier turns are not shown, from run <span className="mono">{earlier.data.cut.id}</span> back:{' '}
              {earlier.data.cut.reason}. Turns are numbered from the first one shown.
            </p>
          )}
          <ol className="turns" aria-label="Turns">
            {[...earlier.data.runs, run].map((r, i) => (
              <Turn key={r.id} run={r} n={i + 1} current={r === run} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
