/** The playground's tools: a JSON editor for tool_definitions and what is wrong with it. */
import { CodeEditor } from '../../components/CodeEditor.tsx';
import type { ParsedTools } from './toolDefinitions.ts';

const TOOLS_LABEL = 'Tools (tool_definitions JSON)';

export function ToolsEditor({
  text,
  parsed,
  onChange,
}: {
  text: string;
  parsed: ParsedTools;
  onChange: (text: string) => void;
}) {
  return (
    <div className="schema-editor">
      <h3>Tools</h3>
      <p className="muted hint">
        Optional: a JSON array of {'{name, description, input_schema}'}. The model may call them; you answer each call
        below.
      </p>
      <CodeEditor label={TOOLS_LABEL} value={text} onChange={onChange} language="json" minHeight="4rem" />
      {parsed.tools === undefined ? (
        <p className="field-error" role="alert">
          Tools: {parsed.error}
        </p>
      ) : parsed.tools.length ? (
        <p className="muted">
          {parsed.tools.length} tool{parsed.tools.length === 1 ? '' : 's'}: {parsed.tools.map((t) => t.name).join(', ')}
        </p>
      ) : null}
    </div>
  );
}
