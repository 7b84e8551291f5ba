/**
 * Experiments (src/experiments over HTTP): list, start, one with its figures, its items, cancel, re-run
 * an item, compare two; a run's answer text.
 */
import { apiFetch } from '../../api/client.ts';

export type ExperimentStatus = 'queued' | 'running' | 'completed' | 'failed' | 'canceled';

interface ScoreFigures {
  mean: number | null;
  min: number | null;
  max: number | null;
  count: number;
  errors: number;
  pass_rate: number | null;
  distribution: Record<string, number>;
}

interface Variant {
  name: string;
  interaction: string;
  runs?: { completed: number; failed: number };
  scores?: Record<string, ScoreFigures>;
  latency?: { p50: number | null; p95: number | null };
  tokens?: number;
  cost?: number;
}

export interface Experiment {
  id: string;
  name?: string;
  dataset: { id: string; version: number };
  status: ExperimentStatus;
  error?: string;
  progress: { done: number; total: number; completed: number; failed: number; canceled: number };
  variants: Variant[];
  evaluators: Array<{ id: string; name: string; version: number }>;
  created_at: string;
  ended_at?: string;
}

type CellScore = { value: number | boolean | string; score: string } | { error: string };
export interface Cell {
  run?: string;
  status: string;
  scores: Record<string, CellScore>;
  error?: string;
}
export interface ExperimentItem {
  item: string;
  data: Record<string, unknown>;
  expected?: unknown;
  runs: Record<string, Cell>;
}

export interface NewExperiment {
  name?: string;
  dataset: string;
  variants: Array<{ name: string; interaction: string }>;
  evaluators?: string[];
}

/** Items shown side by side per page (each shown answer is a GET /runs/:id). */
export const ITEMS_PAGE = 20;
export const ENDED: ExperimentStatus[] = ['completed', 'failed', 'canceled'];

const path = (id: string, rest = '') => `/experiments/${encodeURIComponent(id)}${rest}`;

export const listExperiments = (signal?: AbortSignal) =>
  apiFetch<Experiment[]>('/experiments', { query: { limit: 1000 }, signal });
export const getExperiment = (id: string, signal?: AbortSignal) => apiFetch<Experiment>(path(id), { signal });
export const experimentItems = (id: string, offset: number, signal?: AbortSignal) =>
  apiFetch<ExperimentItem[]>(path(id, '/items'), { query: { limit: ITEMS_PAGE, offset }, signal });
export const startExperiment = (body: NewExperiment) => apiFetch<Experiment>('/experiments', { method: 'POST', body });
export const cancelExperiment = (id: string) => apiFetch<Experiment>(path(id, '/cancel'), { method: 'POST' });
export const rerunItem = (id: string, item: string) =>
  apiFetch<Experiment>(path(id, `/items/${encodeURIComponent(item)}/rerun`), { method: 'POST' });

/** Per variant name both experiments have: the other's figure minus this one's (null where either has none). */
interface VariantDelta {
  scores: Record<string, { mean: number | null; pass_rate: number | null }>;
  latency_p50: number | null;
  cost: number | null;
  tokens: number | null;
}
export interface Comparison {
  experiments: [Experiment, Experiment];
  same_dataset: boolean;
  deltas: Record<string, VariantDelta>;
}
export const compareExperiments = (id: string, other: string, signal?: AbortSignal) =>
  apiFetch<Comparison>(path(id, '/compare'), { query: { with: other }, signal });

/** A run's answer as text: its text parts joined, JSON parts as JSON. */
export async function answerText(run: string, signal?: AbortSignal): Promise<string> {
  const r = await apiFetch<{ result?: Array<{ type?: string; value?: unknown }> }>(`/runs/${encodeURIComponent(run)}`, {
    signal,
  });
  return (r.result ?? [])
    .map((p) => (p.type === 'text' && typeof p.value === 'string' ? p.value : JSON.stringify(p.value)))
    .join('\n');
}

/** Figures as the table shows them. */
export const fmt = (n: number | null | undefined, digits = 3): string =>
  n === null || n === undefined ? '—' : Number.isInteger(n) ? n.toLocaleString() : n.toFixed(digits);
export const pct = (n: number | null | undefined): string =>
  n === null || n === undefined ? '—' : `${Math.round(n * 1000) / 10} %`;
/** A difference with its sign: "+0.5", "−1", "0". */
export const signed = (n: number | null | undefined, digits = 3): string =>
  n === null || n === undefined ? '—' : n > 0 ? `+${fmt(n, digits)}` : n < 0 ? `−${fmt(-n, digits)}` : '0';
/** A difference of two rates, in percentage points. */
export const signedPoints = (n: number | null | undefined): string =>
  n === null || n === undefined ? '—' : `${signed(Math.round(n * 1000) / 10, 1)} pt`;
