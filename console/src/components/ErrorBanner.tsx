/** An error shown where it happened: role `alert`, the server's message and code, an optional retry. */
import { ApiError, errorMessage } from '../api/errors.ts';

// `onRetry` is called and forgotten: react-query's `refetch()` resolves with the error state rather than
// rejecting, so callers pass `() => void query.refetch()`.
export function ErrorBanner({ error, onRetry, title }: { error: unknown; onRetry?: () => void; title?: string }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.error} (${error.status})` : undefined;
  return (
    <div className="error-banner" role="alert">
      {title && <strong>{title}: </strong>}
      <span>{errorMessage(error)}</span>
      {code && <span className="muted"> · {code}</span>}
      {onRetry && (
        <button type="button" className="link" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}
