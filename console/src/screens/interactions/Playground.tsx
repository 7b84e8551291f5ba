/**
 * The playground beside the interaction editor: sample data (a JSON editor, pre-filled from the
 * test data, the input schema or the templates' variables), the prompt rendered for that data
 * role by role from the editor's segments as they are (POST /prompts/render), an environment and a model, and
 * "Run": a normal streamed run (POST /runs with stream: true, then GET /runs/:id/stream), linked.
 * Tools (tool_definitions, checked before anything is sent) may be given; every run starts a
 * conversation, continued below the answer (PlaygroundConversation: tool calls answered by hand,
 * user messages).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { client } from '../../api/client.ts';
import { getToken } from '../../api/session.ts';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { CodeEditor } from '../../components/CodeEditor.tsx';
import { Loading } from '../../components/Page.tsx';
import { api, parseData, pretty, sampleData, type Interaction } from './model.ts';
import type { EditSegment } from './InteractionDetailPage.tsx';
import { EnvironmentOptions } from './EnvironmentOptions.tsx';
import { parseTools } from './toolDefinitions.ts';
import { ToolsEditor } from './ToolsEditor.tsx';
import { PlaygroundConversation } from './PlaygroundConversation.tsx';
import { resultText as partsText } from '../../components/conversation/types.ts';

interface FinalRun {
  id: string;
  status: string;
  result?: unknown;
  error?: { code?: string; message?: string } | string;
  token_use?: { prompt?: number; result?: number; total?: number };
}

/** The value after it stopped changing for `ms`. */
function useSettled<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

export function Playground({
  interaction,
  segments,
  dirty,
  saveFirst,
}: {
  interaction: Interaction;
  segments: EditSegment[];
  dirty: boolean;
  saveFirst: () => Promise<boolean>;
}) {
  const [dataText, setDataText] = useState(() => pretty(sampleData(interaction, segments)) || '{}');
  const parsed = useMemo(() => parseData(dataText), [dataText]);
  const settled = useSettled(parsed.value ? JSON.stringify(parsed.value) : null, 300);
  const envs = useQuery({ queryKey: ['environments'], queryFn: api.environments });
  const [env, setEnv] = useState(interaction.environment ?? '');
  const [model, setModel] = useState(interaction.model ?? '');
  const envId = env || envs.data?.[0]?.id || '';
  const models = useQuery({
    queryKey: ['environment-models', envId],
    queryFn: () => api.models(envId),
    enabled: !!envId,
    retry: false,
  });
  const chosenEnv = envs.data?.find((e) => e.id === envId);
  const [toolsText, setToolsText] = useState('');
  const tools = useMemo(() => parseTools(toolsText), [toolsText]);

  // The segments as edited (saved or not, stored or inline) render on the server, as a run would
  // render them: Run saves the edits first, so this is what it sends.
  const drafts = useSettled(
    JSON.stringify(
      segments
        .filter((s) => s.type === 'template')
        .map((s) => ({
          name: s.name,
          role: s.role,
          content_type: s.content_type,
          content: s.content,
          inputSchema: s.inputSchema ?? null,
        })),
    ),
    300,
  );
  const render = useQuery({
    queryKey: ['render-draft', drafts, settled, model],
    enabled: settled !== null,
    queryFn: async () =>
      Promise.all(
        (
          JSON.parse(drafts) as Array<{
            name: string;
            role: string;
            content_type: string;
            content: string;
            inputSchema: Record<string, unknown> | null;
          }>
        ).map(async (t) => {
          try {
            const r = await api.renderDraft({ ...t, data: JSON.parse(settled!) }, model || undefined);
            return { role: r.role, name: t.name, text: r.rendered };
          } catch (err) {
            return { role: t.role, name: t.name, text: '', error: err };
          }
        }),
      ),
  });

  // The run.
  const [runId, setRunId] = useState<string | null>(null);
  const [answer, setAnswer] = useState('');
  const [final, setFinal] = useState<FinalRun | null>(null);
  const [running, setRunning] = useState(false);
  const [runError, setRunError] = useState<unknown>(null);
  const source = useRef<EventSource | null>(null);
  useEffect(() => () => source.current?.close(), []);

  const run = async () => {
    if (!parsed.value) return;
    if (tools.error) {
      setRunError({ message: `Nothing was sent: the tools are not valid (${tools.error}).` });
      return;
    }
    source.current?.close();
    setRunError(null);
    setFinal(null);
    setAnswer('');
    setRunId(null);
    setRunning(true);
    try {
      if (dirty && !(await saveFirst())) {
        setRunError({ message: 'The draft could not be saved, so it was not run (see the errors above).' });
        setRunning(false);
        return;
      }
      const created = (await (client() as any).runs.create({
        interaction: interaction.id,
        data: parsed.value,
        stream: true,
        tags: ['playground'],
        conversation: true,
        ...(tools.tools?.length ? { tool_definitions: tools.tools } : {}),
        config: { ...(envId ? { environment: envId } : {}), ...(model ? { model } : {}) },
      })) as FinalRun;
      setRunId(created.id);
      if (created.status === 'failed') {
        setFinal(created);
        setRunning(false);
        return;
      }
      const url = `/api/v1/runs/${encodeURIComponent(created.id)}/stream?access_token=${encodeURIComponent(await getToken())}`;
      const es = new EventSource(url);
      source.current = es;
      es.onmessage = (e) => {
        try {
          const chunk = JSON.parse(e.data);
          if (typeof chunk === 'string') setAnswer((a) => a + chunk);
        } catch {
          /* not a chunk */
        }
      };
      es.addEventListener('close', (e) => {
        es.close();
        try {
          setFinal(JSON.parse((e as MessageEvent).data));
        } catch {
          /* no final run */
        }
        setRunning(false);
      });
      es.onerror = () => {
        if (es.readyState === EventSource.CLOSED || source.current !== es) return;
        es.close();
        setRunError({ message: 'The stream was interrupted; open the run to see how it ended.' });
        setRunning(false);
      };
    } catch (err) {
      setRunError(err);
      setRunning(false);
    }
  };

  const failure =
    final?.status === 'failed'
      ? typeof final.error === 'string'
        ? final.error
        : (final.error?.message ?? 'the run failed')
      : null;
  // A result of parts (the run's shape) is shown as their text: a turn that only calls tools has none.
  const resultText =
    final && !answer && final.result !== undefined && final.result !== null
      ? typeof final.result === 'string'
        ? final.result
        : Array.isArray(final.result)
          ? partsText(final.result)
          : pretty(final.result)
      : '';

  return (
    <section className="card playground" aria-labelledby="playground-title">
      <h2 id="playground-title">Playground</h2>
      <div className="schema-editor">
        <h3>Sample data</h3>
        <CodeEditor label="Sample data" value={dataText} onChange={setDataText} language="json" minHeight="5rem" />
        {parsed.error && <p className="field-error">Sample data: {parsed.error}</p>}
      </div>

      <h3 id="rendered-title">Rendered prompt</h3>
      {dirty && (
        <p className="muted hint">
          Rendered from your unsaved edits; Run saves them first.{' '}
          <button type="button" className="link" onClick={() => void saveFirst()}>
            Save now
          </button>
        </p>
      )}
      {render.isPending && settled !== null ? (
        <Loading label="Rendering…" />
      ) : render.error ? (
        <ErrorBanner error={render.error} />
      ) : render.data?.length === 0 ? (
        <p className="muted">No segment to render.</p>
      ) : (
        <ol className="messages" aria-labelledby="rendered-title">
          {render.data?.map((m, n) => (
            <li key={n} className={`message role-${m.role}`}>
              <div className="message-head">
                <strong>{m.role}</strong> <span className="muted">{m.name}</span>
              </div>
              {'error' in m && m.error ? <ErrorBanner error={m.error} /> : <pre className="code-block">{m.text}</pre>}
            </li>
          ))}
        </ol>
      )}

      <ToolsEditor text={toolsText} parsed={tools} onChange={setToolsText} />

      <div className="settings-grid">
        <label>
          Environment{' '}
          <select
            value={envId}
            onChange={(e) => {
              setEnv(e.target.value);
              setModel('');
            }}
            aria-label="Playground environment"
          >
            {!envs.data?.length && <option value="">(none)</option>}
            <EnvironmentOptions environments={envs.data} />
          </select>
        </label>
        <label>
          Model{' '}
          <select value={model} onChange={(e) => setModel(e.target.value)} aria-label="Playground model">
            <option value="">
              {interaction.model && envId === interaction.environment
                ? `the interaction's (${interaction.model})`
                : `the environment's default${chosenEnv?.default_model ? ` (${chosenEnv.default_model})` : ''}`}
            </option>
            {models.data?.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
      </div>
      {models.error && <p className="field-error">Models: {String((models.error as Error).message)}</p>}
      <div className="form-actions">
        <button type="button" onClick={() => void run()} disabled={running || !parsed.value || !envId}>
          {running ? 'Running…' : 'Run'}
        </button>
        {runId && (
          <Link to="/runs/$runId" params={{ runId }} className="run-link">
            Open run {runId}
          </Link>
        )}
      </div>
      {runError ? <ErrorBanner error={runError} title="Run" /> : null}
      {(runId || running) && (
        <div className="answer" aria-live="polite" aria-busy={running}>
          <h3>Answer</h3>
          <pre className="code-block" data-testid="playground-answer">
            {answer || resultText || (running ? '…' : '')}
          </pre>
          {final && (
            <p className={failure ? 'status-failed' : 'muted'} role="status">
              {failure ? `Failed: ${failure}` : `Run ${final.status}`}
              {final.token_use?.total !== undefined ? ` · ${final.token_use.total} tokens` : ''}
            </p>
          )}
        </div>
      )}
      {runId && final?.status === 'completed' && <PlaygroundConversation key={runId} firstRunId={runId} />}
    </section>
  );
}
