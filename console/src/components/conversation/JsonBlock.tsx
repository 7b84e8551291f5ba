/**
 * A JSON value pretty-printed as text (never as HTML); folded behind a summary when it is long,
 * so that a turn with big arguments stays readable.
 */
import { CappedText } from '../CappedText.tsx';

const FOLD_LINES = 12;

export function JsonBlock({ value, label, filename }: { value: unknown; label: string; filename: string }) {
  const text = JSON.stringify(value, null, 2) ?? 'undefined';
  const lines = text.split('\n').length;
  const block = (
    <CappedText
      text={text}
      label={label}
      filename={filename}
      type="application/json"
      className="code-block json-block"
    />
  );
  if (lines <= FOLD_LINES) return block;
  return (
    <details className="json-fold">
      <summary>
        {label} <span className="muted">({lines.toLocaleString()} lines)</span>
      </summary>
      {block}
    </details>
  );
}
