/** A link to hand on: shown in a read-only field (selectable by hand) with a Copy button. */
import { useId, useState } from 'react';

export function CopyLink({ value, label }: { value: string; label: string }) {
  const id = useId();
  const [done, setDone] = useState<'copied' | 'failed' | null>(null);
  return (
    <div className="copy-link">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input id={id} readOnly value={value} onFocus={(e) => e.target.select()} spellCheck={false} />
        <button
          type="button"
          aria-label={`Copy the ${label.toLowerCase()}`}
          onClick={() => {
            navigator.clipboard
              ?.writeText(value)
              .then(() => setDone('copied'))
              .catch(() => setDone('failed'));
          }}
        >
          Copy
        </button>
      </div>
      <span role="status" className="muted">
        {done === 'copied'
          ? 'Copied.'
          : done === 'failed'
            ? 'Copying failed: select the link and copy it by hand.'
            : ''}
      </span>
    </div>
  );
}
