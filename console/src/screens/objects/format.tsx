import { useEffect, useState } from 'react';

/** Small formatting helpers of the objects screens. */
export function formatBytes(n: unknown): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatDate(iso: unknown): string {
  if (typeof iso !== 'string' || !iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace('T', ' ').slice(0, 19);
}

/** `/a/b` → ['a', 'b']; `/` → []. */
export const segmentsOf = (location: string): string[] => location.split('/').filter(Boolean);

export const joinLocation = (segments: string[]): string => `/${segments.join('/')}`;

/** The CSS class of a status badge. */
const statusClass = (status: unknown): string =>
  `obj-status obj-status-${typeof status === 'string' ? status : 'unknown'}`;

export function StatusBadge({ status }: { status?: string }) {
  return <span className={statusClass(status)}>{status ?? 'unknown'}</span>;
}

/** Whether the viewport is at most `px` wide (follows resizes). */
export function useNarrow(px = 640): boolean {
  const query = `(max-width: ${px}px)`;
  const [narrow, setNarrow] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const m = window.matchMedia(query);
    const on = () => setNarrow(m.matches);
    m.addEventListener('change', on);
    on();
    return () => m.removeEventListener('change', on);
  }, [query]);
  return narrow;
}
