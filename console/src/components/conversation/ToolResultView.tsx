/** One tool result sent back to the model: the call it answers, whether it is an error, its content. */
import { CappedText } from '../CappedText.tsx';

export function ToolResultView({ id, content, isError }: { id: string; content: string; isError: boolean }) {
  return (
    <div
      className={`tool-result${isError ? ' is-error' : ''}`}
      role="group"
      aria-label={`Tool result for ${id}${isError ? ' (error)' : ''}`}
    >
      <div className="part-head">
        <span className="part-kind">Tool result</span> <span className="muted mono">{id}</span>
        {isError && <span className="run-status status-failed"> error</span>}
      </div>
      <CappedText
        text={content}
        limit={8000}
        label={`Content of the result for ${id}`}
        className="code-block message-content"
      />
    </div>
  );
}
