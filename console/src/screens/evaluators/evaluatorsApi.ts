/** Evaluators (GET/POST/PUT /evaluators, POST /evaluators/:id/evaluate) as the console reads and writes them. */
import { apiFetch } from '../../api/client.ts';
import type { Score } from '../scores/scoresApi.ts';

export interface Evaluator {
  id: string;
  name: string;
  description?: string;
  type: string;
  config: Record<string, unknown>;
  version: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface Evaluation {
  evaluator: string;
  version: number;
  score?: Score;
  reason?: string;
  error?: { message: string };
}

/** The types a form can make, each with the config it starts from (docs/guides/evaluation.md). */
export const EVALUATOR_TYPES = [
  { type: 'exact_match', label: 'Exact match', config: {} },
  { type: 'contains', label: 'Contains', config: { value: '', case_sensitive: false } },
  { type: 'regex', label: 'Regular expression', config: { pattern: '', flags: 'i' } },
  { type: 'json_schema_valid', label: 'JSON schema valid', config: { schema: { type: 'object' } } },
  { type: 'latency_under', label: 'Latency under', config: { ms: 1000 } },
  { type: 'cost_under', label: 'Cost under', config: { usd: 0.01 } },
  { type: 'code', label: 'Code (jst function body)', config: { body: 'return output.length < 200;' } },
  { type: 'judge', label: 'Judge (an interaction)', config: { interaction: '' } },
] as const;

/** The list is bounded by the API's page (1,000); a project keeps few evaluators. */
export const listEvaluators = (signal?: AbortSignal) =>
  apiFetch<Evaluator[]>('/evaluators', { query: { limit: 1000 }, signal });

export const getEvaluator = (id: string, version?: number, signal?: AbortSignal) =>
  apiFetch<Evaluator>(`/evaluators/${encodeURIComponent(id)}`, { query: { version }, signal });

export const createEvaluator = (body: {
  name: string;
  type: string;
  config?: Record<string, unknown>;
  description?: string;
}) => apiFetch<Evaluator>('/evaluators', { method: 'POST', body });

export const evaluateRun = (id: string, body: { run: string; expected?: unknown }) =>
  apiFetch<Evaluation>(`/evaluators/${encodeURIComponent(id)}/evaluate`, { method: 'POST', body });
