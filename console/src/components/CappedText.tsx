/**
 * Shows a possibly huge string without freezing the tab: the first `limit` characters, then
 * "Show all" (renders everything, on demand) and "Download" (a file, never rendered).
 */
import { useState } from 'react';

const DEFAULT_CAP = 20_000;

export function downloadText(text: string, filename: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function CappedText({
  text,
  limit = DEFAULT_CAP,
  filename = 'content.txt',
  type,
  className,
  label,
}: {
  text: string;
  limit?: number;
  filename?: string;
  type?: string;
  className?: string;
  /** Accessible name of the scrolling block. */ label?: string;
}) {
  const [all, setAll] = useState(false);
  const capped = !all && text.length > limit;
  return (
    <div className="capped">
      {/* Focusable: the block scrolls, and keyboard users must be able to scroll it. */}
      <pre className={className ?? 'code-block'} tabIndex={0} aria-label={label}>
        {capped ? text.slice(0, limit) : text}
      </pre>
      {text.length > limit && (
        <p className="capped-actions">
          {capped && (
            <span className="muted">
              Showing {limit.toLocaleString()} of {text.length.toLocaleString()} characters.{' '}
            </span>
          )}
          {capped && (
            <button type="button" onClick={() => setAll(true)}>
              Show all
            </button>
          )}
          <button type="button" onClick={() => downloadText(text, filename, type)}>
            Download
          </button>
        </p>
      )}
    </div>
  );
}

/** JSON pretty-printed, capped the same way. */
export function CappedJson({
  value,
  limit,
  filename = 'content.json',
  label,
}: {
  value: unknown;
  limit?: number;
  filename?: string;
  label?: string;
}) {
  return (
    <CappedText
      text={JSON.stringify(value, null, 2) ?? 'undefined'}
      limit={limit}
      filename={filename}
      type="application/json"
      label={label}
    />
  );
}
