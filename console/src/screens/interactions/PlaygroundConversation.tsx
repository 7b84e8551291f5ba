/**
 * A playground run continued turn after turn: the model's tool calls answered by hand
 * (POST /runs/tool-results, the official client's runs.sendToolResults) and user messages
 * (POST /runs/user-message, runs.sendUserMessage), each a new run linked to the last by
 * previous_run. The first turn's text is the Answer above; its tool calls and every later turn
 * are shown here.
 */
import { useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { client } from '../../api/client.ts';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { Loading } from '../../components/Page.tsx';
import { MessageList } from '../../components/conversation/MessageList.tsx';
import { answerMessage, asMessage, toolCallsOf, type Message } from '../../components/conversation/types.ts';
import { ToolAnswers, type ToolAnswer } from './ToolAnswers.tsx';
import { ReplyForm } from './ReplyForm.tsx';

interface TurnRun {
  id: string;
  status: string;
  prompt?: unknown;
  result?: unknown;
  tool_use?: unknown;
  error?: { message?: string } | string;
}

const retrieve = (id: string) => client().runs.retrieve(id) as Promise<unknown> as Promise<TurnRun>;

/**
 * What a turn shows: what it sent (none for the first: the rendered prompt is above) and what the
 * model answered, its text and, unless they wait for an answer in the form below, its tool calls.
 */
function messagesOf(run: TurnRun, first: boolean, pending: boolean): Message[] {
  const input = first || !Array.isArray(run.prompt) ? [] : run.prompt.map(asMessage).filter((m): m is Message => !!m);
  const answer = answerMessage({
    result: first ? undefined : run.result,
    tool_use: pending ? undefined : run.tool_use,
  });
  return answer ? [...input, answer] : input;
}

function TurnView({ run, n, pending }: { run: TurnRun; n: number; pending: boolean }) {
  const messages = messagesOf(run, n === 1, pending);
  if (!messages.length) return null;
  return (
    <li className="turn">
      <section aria-label={`Playground turn ${n}`}>
        <h4 className="turn-head">
          Turn {n}{' '}
          <Link to="/runs/$runId" params={{ runId: run.id }} aria-label={`Open turn ${n}: run ${run.id}`}>
            {run.id}
          </Link>
        </h4>
        <MessageList messages={messages} label={`Turn ${n}, message`} />
      </section>
    </li>
  );
}

export function PlaygroundConversation({ firstRunId }: { firstRunId: string }) {
  const first = useQuery({ queryKey: ['run', firstRunId], queryFn: () => retrieve(firstRunId) });
  const [later, setLater] = useState<TurnRun[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  if (first.error) return <ErrorBanner error={first.error} onRetry={() => void first.refetch()} title="Conversation" />;
  if (!first.data) return <Loading label="Loading the run…" />;
  const turns = [first.data, ...later];
  const last = turns.at(-1)!;
  const calls = last.status === 'completed' ? toolCallsOf(last.tool_use) : [];

  const send = async (call: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      const run = (await call()) as TurnRun;
      setLater((l) => [...l, run]);
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      setBusy(false);
    }
  };
  const runs = client().runs as unknown as {
    sendToolResults(p: unknown): Promise<unknown>;
    sendUserMessage(p: unknown): Promise<unknown>;
  };

  return (
    <div className="playground-conversation" aria-busy={busy}>
      <ol className="turns" aria-label="Playground conversation">
        {turns.map((r, i) => (
          <TurnView key={r.id} run={r} n={i + 1} pending={r === last && calls.length > 0} />
        ))}
      </ol>
      {last.status === 'failed' ? (
        <p className="status-failed" role="status">
          Turn {turns.length} failed:{' '}
          {typeof last.error === 'string' ? last.error : (last.error?.message ?? 'no reason given')}
        </p>
      ) : calls.length ? (
        <ToolAnswers
          key={last.id}
          calls={calls}
          busy={busy}
          onSend={(results: ToolAnswer[]) =>
            void send(() => runs.sendToolResults({ run: last.id, results, tags: ['playground'] }))
          }
        />
      ) : (
        <>
          {turns.length > 1 && (
            <p className="muted" role="status">
              The model answered (turn {turns.length}). Continue with a message, or change the prompt and run again.
            </p>
          )}
          <ReplyForm
            busy={busy}
            onSend={(message) => send(() => runs.sendUserMessage({ run: last.id, message, tags: ['playground'] }))}
          />
        </>
      )}
      {error ? <ErrorBanner error={error} title="Continue" /> : null}
    </div>
  );
}
