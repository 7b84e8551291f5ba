/** One tool call of an assistant: the tool's name, the call's id and its arguments. */
import { CappedText } from '../CappedText.tsx';
import { JsonBlock } from './JsonBlock.tsx';
import type { ToolCall } from './types.ts';

export function ToolCallView({ call }: { call: ToolCall }) {
  const name = `Tool call ${call.tool_name} (${call.id})`;
  return (
    <div className="tool-call" role="group" aria-label={name}>
      <div className="part-head">
        <span className="part-kind">Tool call</span> <code>{call.tool_name}</code>{' '}
        <span className="muted mono">{call.id}</span>
      </div>
      {call.tool_input_invalid ? (
        <>
          <p className="status-failed">The arguments are not a JSON object:</p>
          <CappedText text={call.tool_input_text ?? ''} label={`Arguments of ${call.id}, as written`} />
        </>
      ) : (
        <JsonBlock
          value={call.tool_input ?? {}}
          label={`Arguments of ${call.id}`}
          filename={`${call.id}-arguments.json`}
        />
      )}
    </div>
  );
}
