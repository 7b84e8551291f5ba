/**
 * A message's content: its text, or its parts one by one (text, tool calls, tool results,
 * thinking, media by reference). All of it is untrusted and rendered as text.
 */
import { CappedText } from '../CappedText.tsx';
import { JsonBlock } from './JsonBlock.tsx';
import { ToolCallView } from './ToolCallView.tsx';
import { ToolResultView } from './ToolResultView.tsx';
import type { Message, Part, ToolCall } from './types.ts';

const str = (v: unknown) => (typeof v === 'string' ? v : '');

function PartView({ part, label }: { part: Part; label: string }) {
  switch (part.type) {
    case 'text':
      return <CappedText text={str(part.text)} limit={8000} label={label} className="code-block message-content" />;
    case 'tool_use':
      return <ToolCallView call={part as unknown as ToolCall} />;
    case 'tool_result':
      return <ToolResultView id={str(part.tool_use_id)} content={str(part.content)} isError={part.is_error === true} />;
    case 'thinking':
      return (
        <details className="thinking">
          <summary>Thinking</summary>
          <CappedText
            text={str(part.text)}
            limit={8000}
            label={`${label}: thinking`}
            className="code-block message-content"
          />
        </details>
      );
    case 'image':
    case 'document':
      return (
        <p className="muted">
          {part.type === 'image' ? 'Image' : 'Document'} <span className="mono">{str(part.name) || str(part.url)}</span>
        </p>
      );
    default:
      return <JsonBlock value={part} label={`${label}: ${String(part.type)}`} filename="part.json" />;
  }
}

export function MessageContent({ message, label }: { message: Message; label: string }) {
  if (typeof message.content === 'string')
    return <CappedText text={message.content} limit={8000} label={label} className="code-block message-content" />;
  return (
    <div className="message-parts">
      {message.content.map((p, i) => (
        <PartView key={i} part={p} label={message.content.length > 1 ? `${label}, part ${i + 1}` : label} />
      ))}
    </div>
  );
}
