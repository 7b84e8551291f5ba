/** The next user message of a playground conversation (POST /runs/user-message). */
import { useState } from 'react';

export function ReplyForm({ busy, onSend }: { busy: boolean; onSend: (message: string) => Promise<boolean> }) {
  const [message, setMessage] = useState('');
  const empty = !message.trim();
  return (
    <form
      className="reply"
      aria-label="Continue the conversation"
      onSubmit={(e) => {
        e.preventDefault();
        if (empty) return;
        void onSend(message).then((sent) => sent && setMessage(''));
      }}
    >
      <label>
        Your message
        <textarea value={message} onChange={(e) => setMessage(e.target.value)} />
      </label>
      <div className="form-actions">
        <button type="submit" disabled={busy || empty}>
          {busy ? 'Sending…' : 'Send message'}
        </button>
      </div>
    </form>
  );
}
