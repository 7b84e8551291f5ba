/** Messages role by role, each labelled "<label> <n> (<role>)". */
import { MessageContent } from './MessageContent.tsx';
import type { Message } from './types.ts';
import './conversation.css';

export function MessageList({ messages, label }: { messages: Message[]; label: string }) {
  return (
    <ol className="messages">
      {messages.map((m, i) => (
        <li key={i} className={`message role-${m.role}`}>
          <div className="message-role">{m.role}</div>
          <MessageContent message={m} label={`${label} ${i + 1} (${m.role})`} />
        </li>
      ))}
    </ol>
  );
}
