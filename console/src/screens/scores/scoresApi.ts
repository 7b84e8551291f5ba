/**
 * Scores on runs (POST/GET/DELETE /runs/:id/scores) and the evaluators that give them, as the
 * console's screens read and write them.
 */
import { apiFetch } from '../../api/client.ts';
import { tokenClaims } from '../../api/session.ts';

export type ScoreValue = number | boolean | string;

export interface Score {
  id: string;
  run: string;
  name: string;
  value: ScoreValue;
  source: string;
  evaluator?: string;
  comment?: string;
  /** `user:<id>` or `apikey:<id>`, the JWT's `sub` of whoever gave it. */
  created_by: string;
  created_at: string;
}

/** Letters, digits, _ and -: the server's rule, so run search reaches it as scores.<name>. */
export const SCORE_NAME = /^[\p{L}\p{N}_-]{1,100}$/u;

export const runScores = (run: string, signal?: AbortSignal) =>
  apiFetch<Score[]>(`/runs/${encodeURIComponent(run)}/scores`, { signal });

export const addScore = (
  run: string,
  body: { name: string; value: ScoreValue; comment?: string; source: 'human' },
): Promise<Score> => apiFetch<Score>(`/runs/${encodeURIComponent(run)}/scores`, { method: 'POST', body });

export const deleteScore = (run: string, id: string) =>
  apiFetch<{ id: string }>(`/runs/${encodeURIComponent(run)}/scores/${encodeURIComponent(id)}`, { method: 'DELETE' });

/** Whether the signed-in session gave this score (the server records the JWT's subject). */
export const isMine = (s: Score): boolean => {
  const sub = tokenClaims()?.sub;
  return typeof sub === 'string' && sub === s.created_by;
};

/** Who gave a score, for people: `key 01K…` or `user 01K…`, "you" for the session's own. */
export function byWhom(s: Score): string {
  if (isMine(s)) return 'you';
  const [kind, id] = s.created_by.split(':', 2);
  if (!id) return s.created_by;
  return `${kind === 'apikey' ? 'key' : kind} ${id}`;
}

export function formatScore(v: ScoreValue | undefined | null): string {
  if (v === undefined || v === null) return '';
  return String(v);
}
