/**
 * One run: prompt messages role by role, parameters, result (text, or JSON folded), config, token
 * use, timings, source, tags, the error and its code, child runs and attempts. A run still
 * executing streams its chunks live (GET /runs/:id/stream, SSE, `?access_token=`). `j`/`k` move
 * to the next/previous run of the explorer's list.
 */
import { useEffect, useMemo, useState, type ReactNode } from 'react';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { apiFetch, client } from '../../api/client.ts';
import { getToken } from '../../api/session.ts';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { CappedJson, CappedText, downloadText } from '../../components/CappedText.tsx';
import {
  explorerView,
  formatCost,
  formatDuration,
  formatTime,
  nameOf,
  runOrder,
  type Ref,
  type RunRef,
} from './runsApi.ts';
import { ScoresPanel } from '../scores/ScoresPanel.tsx';
import { EvaluatePanel } from '../evaluators/EvaluatePanel.tsx';
import { MessageList } from '../../components/conversation/MessageList.tsx';
import { asMessage, toolCallsOf, type Message } from '../../components/conversation/types.ts';
import { ToolCallView } from '../../components/conversation/ToolCallView.tsx';
import { ConversationPanel, inConversation, useNextRuns } from './ConversationPanel.tsx';
import './runs.css';

const route = getRouteApi('/_app/runs/$runId');

type ResultPart =
  { type: 'text'; value: string } | { type: 'json'; value: unknown } | { type?: string; value?: unknown };

interface Run extends Omit<RunRef, 'interaction' | 'environment'> {
  interaction: (Ref & { [k: string]: unknown }) | string | null;
  environment: (Ref & { [k: string]: unknown }) | string | null;
  result: ResultPart[];
  parameters?: unknown;
  config?: Record<string, unknown>;
  prompt?: unknown;
  source?: Record<string, string>;
  error?: { code: string; message: string; data?: unknown };
  cached?: boolean;
  cached_from?: string;
  ttl?: number;
  evaluation?: { score?: number; selected?: boolean };
  attempts?: Array<{
    status: string;
    error?: { code: string; message: string };
    duration_ms: number;
    repair?: boolean;
    run?: string;
  }>;
  result_schema?: unknown;
  tool_use?: unknown;
  previous_run?: string;
  trace_id?: string;
  span_id?: string;
}

/** ORRERY_TRACE_URL (`{trace_id}` in it), which the server puts in the page. */
const traceUrlTemplate = () =>
  document.querySelector<HTMLMetaElement>('meta[name="orrery-trace-url"]')?.content || undefined;

const running = (s: string | undefined) => s === 'created' || s === 'processing';
const idOf = (r: Run['interaction']) => (r === null ? undefined : typeof r === 'string' ? r : r.id);

export function RunDetailPage() {
  const { runId } = route.useParams();
  const qc = useQueryClient();
  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => client().runs.retrieve(runId) as Promise<unknown> as Promise<Run>,
  });
  const children = useQuery({
    queryKey: ['run', runId, 'children'],
    queryFn: () => apiFetch<RunRef[]>('/runs', { query: { parent: runId, limit: 200 } }),
    enabled: !!run.data,
  });
  const stream = useRunStream(runId, running(run.data?.status), (final) => {
    qc.setQueryData(['run', runId], (prev: Run | undefined) => ({ ...prev, ...final }) as Run);
    void qc.invalidateQueries({ queryKey: ['run', runId] });
    void qc.invalidateQueries({ queryKey: ['runs'] });
  });
  const nav = useRunKeys(runId);
  const next = useNextRuns(runId);

  const r = run.data;
  return (
    <Page title={`Run ${runId}`} wide actions={<RunNav nav={nav} />}>
      <p className="run-back">
        <Link to="/runs" search={explorerView()}>
          ← All runs
        </Link>
      </p>
      {run.error ? (
        <ErrorBanner error={run.error} onRetry={() => void run.refetch()} />
      ) : !r ? (
        <Loading label="Loading the run…" />
      ) : (
        <div className="run-detail">
          <section className="card run-summary" aria-labelledby="run-summary-h">
            <h2 id="run-summary-h">Summary</h2>
            <dl className="kv">
              <Kv k="Status">
                <span className={`run-status status-${r.status}`}>{r.status}</span>
                {running(r.status) && (
                  <span className="muted"> · {stream.state === 'open' ? 'streaming…' : stream.state}</span>
                )}
              </Kv>
              <Kv k="Interaction">
                {idOf(r.interaction) ? (
                  <Link to="/interactions/$interactionId" params={{ interactionId: idOf(r.interaction)! }}>
                    {nameOf(r.interaction)}
                  </Link>
                ) : (
                  '—'
                )}
              </Kv>
              <Kv k="Environment">{nameOf(r.environment) || '—'}</Kv>
              <Kv k="Model">{r.model ?? r.modelId ?? '—'}</Kv>
              <Kv k="Created">{formatTime(r.created_at)}</Kv>
              <Kv k="Updated">{formatTime(r.updated_at)}</Kv>
              <Kv k="Duration">{formatDuration(r.execution_time) || '—'}</Kv>
              {r.finish_reason && <Kv k="Finish reason">{r.finish_reason}</Kv>}
              {r.cost && (
                <Kv k="Cost">
                  {formatCost(r.cost)}{' '}
                  <span className="muted">({(r.cost as { price_table?: string }).price_table})</span>
                </Kv>
              )}
              {r.parent && (
                <Kv k="Parent run">
                  <Link to="/runs/$runId" params={{ runId: r.parent }}>
                    {r.parent}
                  </Link>
                </Kv>
              )}
              {r.cached_from && (
                <Kv k="Cached from">
                  <Link to="/runs/$runId" params={{ runId: r.cached_from }}>
                    {r.cached_from}
                  </Link>
                </Kv>
              )}
              {r.trace_id && (
                <Kv k="Trace">
                  {traceUrlTemplate() ? (
                    <a
                      href={traceUrlTemplate()!.replaceAll('{trace_id}', encodeURIComponent(r.trace_id))}
                      target="_blank"
                      rel="noreferrer"
                    >
                      {r.trace_id}
                    </a>
                  ) : (
                    <code>{r.trace_id}</code>
                  )}
                  {r.span_id && <span className="muted"> · span {r.span_id}</span>}
                </Kv>
              )}
              {r.evaluation && (
                <Kv k="Evaluation">
                  score {r.evaluation.score ?? '—'}
                  {r.evaluation.selected ? ', selected' : ''}
                </Kv>
              )}
              {r.ttl ? <Kv k="TTL">{r.ttl.toLocaleString()} s</Kv> : null}
            </dl>
            <h3>Token use</h3>
            <dl className="kv kv-inline" aria-label="Token use">
              <Kv k="Prompt">{r.token_use?.prompt?.toLocaleString() ?? '—'}</Kv>
              <Kv k="Result">{r.token_use?.result?.toLocaleString() ?? '—'}</Kv>
              <Kv k="Total">{r.token_use?.total?.toLocaleString() ?? '—'}</Kv>
            </dl>
            <h3>Tags</h3>
            {r.tags?.length ? (
              <ul className="chips" aria-label="Tags">
                {r.tags.map((t) => (
                  <li key={t}>
                    <Link className="tag" to="/runs" search={{ facets: { tags: [t] } }} aria-label={`Runs tagged ${t}`}>
                      {t}
                    </Link>
                  </li>
                ))}
              </ul>
            ) : (
              <p className="muted">No tags.</p>
            )}
            {r.source && Object.keys(r.source).length > 0 && (
              <>
                <h3>Source</h3>
                <dl className="kv">
                  {Object.entries(r.source).map(([k, v]) => (
                    <Kv key={k} k={k}>
                      <span className="mono">{String(v)}</span>
                    </Kv>
                  ))}
                </dl>
              </>
            )}
          </section>

          <div className="run-body">
            {r.error && (
              <section className="run-error" aria-labelledby="run-error-h">
                <h2 id="run-error-h">Error</h2>
                <p>
                  <code className="run-error-code">{r.error.code}</code> {r.error.message}
                </p>
                {r.error.data !== undefined && (
                  <CappedJson value={r.error.data} label="Error data" filename={`${runId}-error.json`} />
                )}
              </section>
            )}

            {inConversation(r, next.data) ? (
              <ConversationPanel run={r} />
            ) : (
              <section className="card" aria-labelledby="run-prompt-h">
                <h2 id="run-prompt-h">Prompt</h2>
                <Messages prompt={r.prompt} runId={runId} />
              </section>
            )}

            <section className="card" aria-labelledby="run-result-h">
              <h2 id="run-result-h">Result</h2>
              {running(r.status) ? (
                <div aria-live="polite">
                  <p className="muted">
                    {stream.state === 'open'
                      ? `Streaming: ${stream.chunks.length} chunk${stream.chunks.length === 1 ? '' : 's'} so far…`
                      : stream.state === 'error'
                        ? 'The stream was interrupted; reload to see the final run.'
                        : 'Waiting for the stream…'}
                  </p>
                  <CappedText
                    text={stream.chunks.join('')}
                    label="Streamed result"
                    filename={`${runId}-stream.txt`}
                    className="code-block run-stream"
                  />
                </div>
              ) : (
                <>
                  <Result parts={r.result} runId={runId} />
                  {toolCallsOf(r.tool_use).map((c) => (
                    <ToolCallView key={c.id} call={c} />
                  ))}
                </>
              )}
            </section>

            <ScoresPanel runId={runId} />
            <EvaluatePanel runId={runId} />

            <section className="card" aria-labelledby="run-params-h">
              <h2 id="run-params-h">Parameters</h2>
              <JsonView value={r.parameters} label="Parameters" filename={`${runId}-parameters.json`} />
            </section>

            <section className="card" aria-labelledby="run-config-h">
              <h2 id="run-config-h">Config</h2>
              <JsonView value={r.config} label="Config" filename={`${runId}-config.json`} />
            </section>

            {r.attempts && r.attempts.length > 0 && (
              <section className="card" aria-labelledby="run-attempts-h">
                <h2 id="run-attempts-h">Attempts</h2>
                <ol className="attempts">
                  {r.attempts.map((a, i) => (
                    <li key={i}>
                      <span className={`run-status status-${a.status}`}>{a.status}</span> ·{' '}
                      {formatDuration(a.duration_ms)}
                      {a.repair && <span className="muted"> · repair</span>}
                      {a.error && (
                        <>
                          {' '}
                          · <code>{a.error.code}</code> <span className="muted">{a.error.message}</span>
                        </>
                      )}
                      {a.run && (
                        <>
                          {' '}
                          ·{' '}
                          <Link
                            to="/runs/$runId"
                            params={{ runId: a.run }}
                            aria-label={`Attempt ${i + 1}: run ${a.run}`}
                          >
                            {a.run}
                          </Link>
                        </>
                      )}
                    </li>
                  ))}
                </ol>
              </section>
            )}

            {children.data && children.data.length > 0 && (
              <section className="card" aria-labelledby="run-children-h">
                <h2 id="run-children-h">
                  Child runs ({children.data.length}
                  {children.data.length === 200 ? '+' : ''})
                </h2>
                <ul className="children">
                  {children.data.map((c) => (
                    <li key={c.id}>
                      <Link to="/runs/$runId" params={{ runId: c.id }}>
                        {c.id}
                      </Link>{' '}
                      <span className={`run-status status-${c.status}`}>{c.status}</span>{' '}
                      <span className="muted">
                        {c.model ?? c.modelId ?? ''} · {formatDuration(c.execution_time)}
                      </span>
                    </li>
                  ))}
                </ul>
              </section>
            )}
          </div>
        </div>
      )}
    </Page>
  );
}

function Kv({ k, children }: { k: string; children: ReactNode }) {
  return (
    <div className="kv-row">
      <dt>{k}</dt>
      <dd>{children}</dd>
    </div>
  );
}

// ---- prompt and result --------------------------------------------------------------------------

const MAX_MESSAGES = 200;

function Messages({ prompt, runId }: { prompt: unknown; runId: string }) {
  if (prompt === undefined || prompt === null) return <p className="muted">No prompt recorded.</p>;
  if (!Array.isArray(prompt)) return <JsonView value={prompt} label="Prompt" filename={`${runId}-prompt.json`} />;
  const shown = prompt
    .slice(0, MAX_MESSAGES)
    .map((m) => asMessage(m) ?? { role: 'message', content: JSON.stringify(m, null, 2) ?? '' }) satisfies Message[];
  return (
    <>
      <MessageList messages={shown} label="Message" />
      {prompt.length > MAX_MESSAGES && (
        <p className="muted">
          {prompt.length - MAX_MESSAGES} more messages.{' '}
          <button
            type="button"
            className="link"
            onClick={() => downloadText(JSON.stringify(prompt, null, 2), `${runId}-prompt.json`, 'application/json')}
          >
            Download the whole prompt
          </button>
        </p>
      )}
    </>
  );
}

function Result({ parts, runId }: { parts: ResultPart[] | undefined; runId: string }) {
  if (!parts?.length) return <p className="muted">No result.</p>;
  return (
    <div className="result-parts">
      {parts.map((p, i) =>
        p.type === 'text' && typeof p.value === 'string' ? (
          <CappedText
            key={i}
            text={p.value}
            label={parts.length > 1 ? `Result part ${i + 1}` : 'Result text'}
            filename={`${runId}-result.txt`}
          />
        ) : (
          <JsonView
            key={i}
            value={p.type === 'json' ? p.value : p}
            label={parts.length > 1 ? `Result part ${i + 1}` : 'Result JSON'}
            filename={`${runId}-result.json`}
          />
        ),
      )}
    </div>
  );
}

// ---- JSON: folded tree when small enough, capped text otherwise --------------------------------

const TREE_LIMIT = 200_000;
const MAX_ENTRIES = 200;

function JsonView({ value, label, filename }: { value: unknown; label: string; filename: string }) {
  const text = useMemo(() => JSON.stringify(value, null, 2) ?? 'undefined', [value]);
  const [raw, setRaw] = useState(false);
  if (
    value === undefined ||
    value === null ||
    (typeof value === 'object' && Object.keys(value as object).length === 0)
  ) {
    return <p className="muted">{value === undefined ? 'None.' : JSON.stringify(value)}</p>;
  }
  if (typeof value !== 'object' || raw || text.length > TREE_LIMIT)
    return <CappedJson value={value} label={label} filename={filename} />;
  return (
    <div className="json-view" role="group" aria-label={label}>
      <div className="json-tree code-block">
        <JsonNode value={value} depth={0} />
      </div>
      <p className="capped-actions">
        <button type="button" className="link" onClick={() => setRaw(true)}>
          Show as text
        </button>
        <button type="button" className="link" onClick={() => downloadText(text, filename, 'application/json')}>
          Download
        </button>
      </p>
    </div>
  );
}

function JsonNode({ value, depth, name }: { value: unknown; depth: number; name?: string }) {
  const key = name !== undefined ? <span className="json-key">{JSON.stringify(name)}: </span> : null;
  if (value === null || typeof value !== 'object') {
    const cls = value === null ? 'json-null' : `json-${typeof value}`;
    let t = JSON.stringify(value) ?? 'undefined';
    if (t.length > 2000) t = `${t.slice(0, 2000)}… (${t.length.toLocaleString()} characters; use Show as text)`;
    return (
      <div className="json-line">
        {key}
        <span className={cls}>{t}</span>
      </div>
    );
  }
  const isArr = Array.isArray(value);
  const entries = isArr ? (value as unknown[]).map((v, i) => [String(i), v] as const) : Object.entries(value as object);
  const [open, close] = isArr ? ['[', ']'] : ['{', '}'];
  if (!entries.length) {
    return (
      <div className="json-line">
        {key}
        {open}
        {close}
      </div>
    );
  }
  return (
    <details className="json-node" open={depth < 2}>
      <summary>
        {key}
        {open}
        <span className="muted json-size">
          {' '}
          {entries.length}{' '}
          {isArr ? (entries.length === 1 ? 'item' : 'items') : entries.length === 1 ? 'key' : 'keys'}{' '}
        </span>
      </summary>
      <div className="json-children">
        {entries.slice(0, MAX_ENTRIES).map(([k, v]) => (
          <JsonNode key={k} value={v} depth={depth + 1} name={isArr ? undefined : k} />
        ))}
        {entries.length > MAX_ENTRIES && (
          <div className="muted">… {entries.length - MAX_ENTRIES} more (use Show as text)</div>
        )}
      </div>
      <div>{close}</div>
    </details>
  );
}

// ---- the live stream ----------------------------------------------------------------------------

type StreamState = 'idle' | 'connecting' | 'open' | 'closed' | 'error';

function useRunStream(runId: string, active: boolean, onClose: (final: Partial<Run>) => void) {
  const [chunks, setChunks] = useState<string[]>([]);
  const [state, setState] = useState<StreamState>('idle');
  useEffect(() => {
    if (!active) return;
    let es: EventSource | null = null;
    let done = false;
    setChunks([]);
    setState('connecting');
    void getToken().then((token) => {
      if (done) return;
      es = new EventSource(
        `/api/v1/runs/${encodeURIComponent(runId)}/stream?access_token=${encodeURIComponent(token ?? '')}`,
      );
      es.onopen = () => setState('open');
      es.onmessage = (e) => {
        try {
          const text = JSON.parse(e.data);
          setChunks((prev) => [...prev, typeof text === 'string' ? text : JSON.stringify(text)]);
        } catch {
          /* ignore a malformed chunk */
        }
      };
      es.addEventListener('close', (e) => {
        done = true;
        es?.close();
        setState('closed');
        try {
          onClose(JSON.parse((e as MessageEvent).data));
        } catch {
          onClose({});
        }
      });
      es.onerror = () => {
        // EventSource reconnects by itself (with Last-Event-ID); only a closed source is final.
        if (es?.readyState === EventSource.CLOSED && !done) setState('error');
      };
    });
    return () => {
      done = true;
      es?.close();
    };
  }, [runId, active]); // deps chosen on purpose: not every value read
  return { chunks, state };
}

// ---- j / k --------------------------------------------------------------------------------------

interface RunNavState {
  index: number;
  total: number;
  prev?: string;
  next?: string;
}

function useRunKeys(runId: string): RunNavState {
  const navigate = useNavigate();
  const nav = useMemo(() => {
    const order = runOrder();
    const index = order.indexOf(runId);
    return {
      index,
      total: order.length,
      prev: index > 0 ? order[index - 1] : undefined,
      next: index >= 0 && index < order.length - 1 ? order[index + 1] : undefined,
    };
  }, [runId]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
      const to = e.key === 'j' ? nav.next : e.key === 'k' ? nav.prev : undefined;
      if (to) {
        e.preventDefault();
        void navigate({ to: '/runs/$runId', params: { runId: to } });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [nav, navigate]);
  return nav;
}

function RunNav({ nav }: { nav: RunNavState }) {
  return (
    <nav className="run-nav" aria-label="Runs of the list">
      <span className="muted" aria-live="polite">
        {nav.index >= 0 ? `Run ${(nav.index + 1).toLocaleString()} of ${nav.total.toLocaleString()} · ` : ''}
        <kbd>j</kbd> next, <kbd>k</kbd> previous
      </span>
      {nav.prev ? (
        <Link className="button secondary" to="/runs/$runId" params={{ runId: nav.prev }} aria-label="Previous run (k)">
          ↑ Previous
        </Link>
      ) : (
        <button type="button" className="secondary" disabled aria-label="Previous run (k)">
          ↑ Previous
        </button>
      )}
      {nav.next ? (
        <Link className="button secondary" to="/runs/$runId" params={{ runId: nav.next }} aria-label="Next run (j)">
          Next ↓
        </Link>
      ) : (
        <button type="button" className="secondary" disabled aria-label="Next run (j)">
          Next ↓
        </button>
      )}
    </nav>
  );
}
