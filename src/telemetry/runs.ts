/** A run's document and row as the start and end of its span (telemetry/hooks.ts). */
import type { RunDoc, RunRow } from '../runs/model.ts';
import type { RunEnd, RunStart } from './hooks.ts';

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export function runStartOf(doc: RunDoc, parentRun?: string | null): RunStart {
  const model = typeof doc.config.model === 'string' ? doc.config.model : 'unknown';
  return {
    operation: 'chat',
    provider: doc.environment?.provider ?? 'unknown',
    model,
    interaction: doc.interaction.id,
    environment: doc.environment?.id ?? String(doc.config.environment ?? ''),
    project: doc.project.id,
    temperature: num(doc.config.temperature),
    maxTokens: num(doc.config.max_tokens),
    ...(parentRun ? { parentRun } : {}),
    messages: doc.prompt,
    ...(doc.conversation?.restricted ? { restricted: true } : {}),
  };
}

export function runEndOf(row: RunRow): RunEnd {
  const doc = row.doc as RunDoc;
  return {
    id: row.id,
    status: row.status,
    responseModel: row.model_id,
    inputTokens: row.token_prompt,
    outputTokens: row.token_result,
    finishReason: row.finish_reason,
    cost: doc.cost?.total ?? null,
    ...(doc.error ? { error: { code: doc.error.code, message: doc.error.message } } : {}),
    ...(doc.cached_from ? { cachedFrom: doc.cached_from } : {}),
    ...(doc.tool_use ? { toolUse: doc.tool_use } : {}),
    result: doc.result,
  };
}
