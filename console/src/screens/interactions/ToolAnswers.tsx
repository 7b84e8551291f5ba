/**
 * The model's pending tool calls, each with a field for its result and an "is an error" box;
 * "Send tool results" hands them to `onSend` (POST /runs/tool-results).
 */
import { useState } from 'react';
import { ToolCallView } from '../../components/conversation/ToolCallView.tsx';
import type { ToolCall } from '../../components/conversation/types.ts';

export interface ToolAnswer {
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

export function ToolAnswers({
  calls,
  busy,
  onSend,
}: {
  calls: ToolCall[];
  busy: boolean;
  onSend: (answers: ToolAnswer[]) => void;
}) {
  const [answers, setAnswers] = useState<Record<string, { content: string; is_error: boolean }>>({});
  const of = (id: string) => answers[id] ?? { content: '', is_error: false };
  const set = (id: string, patch: Partial<{ content: string; is_error: boolean }>) =>
    setAnswers((a) => ({ ...a, [id]: { ...of(id), ...patch } }));
  return (
    <form
      className="tool-answers"
      aria-label="Answer the tool calls"
      onSubmit={(e) => {
        e.preventDefault();
        onSend(calls.map((c) => ({ tool_use_id: c.id, ...of(c.id) })));
      }}
    >
      <h3>The model calls {calls.length === 1 ? 'a tool' : `${calls.length} tools`}: answer by hand</h3>
      {calls.map((c) => (
        <div key={c.id} className="tool-answer">
          <ToolCallView call={c} />
          <label>
            Result for {c.tool_name} ({c.id})
            <textarea value={of(c.id).content} onChange={(e) => set(c.id, { content: e.target.value })} />
          </label>
          <label>
            <input
              type="checkbox"
              checked={of(c.id).is_error}
              onChange={(e) => set(c.id, { is_error: e.target.checked })}
            />{' '}
            The result of {c.id} is an error
          </label>
        </div>
      ))}
      <div className="form-actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Sending…' : 'Send tool results'}
        </button>
      </div>
    </form>
  );
}
