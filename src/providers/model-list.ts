/**
 * Reading a provider's model list (`GET …/models`) into Orrery's `{id, name, description?}`.
 */
import { ProviderError, type ModelInfo } from './driver.ts';

/** A listing is interactive (a console's model picker): it gets less time than a run. */
export const MODEL_LIST_TIMEOUT_MS = 30_000;
/** No provider lists more than a few hundred models; past this is a misbehaving server. */
const MAX_LISTED_MODELS = 2_000;

/**
 * `{data: [{id, display_name?, name?, description?}]}` (OpenAI, Anthropic, Mistral, Groq, xAI, Ollama,
 * vLLM, TGI) or a bare array of the same (Together). Sorted by id, at most MAX_LISTED_MODELS.
 */
export function modelList(answer: unknown, label: string): ModelInfo[] {
  const items = Array.isArray(answer) ? answer : (answer as { data?: unknown } | null)?.data;
  if (!Array.isArray(items))
    throw new ProviderError('provider_error', `${label} answered a model list without a data array`);
  const models: ModelInfo[] = [];
  for (const item of items) {
    if (!item || typeof item !== 'object' || typeof (item as { id?: unknown }).id !== 'string') continue;
    const m = item as { id: string; display_name?: unknown; name?: unknown; description?: unknown };
    const name = typeof m.display_name === 'string' ? m.display_name : typeof m.name === 'string' ? m.name : m.id;
    models.push({ id: m.id, name, ...(typeof m.description === 'string' ? { description: m.description } : {}) });
    if (models.length === MAX_LISTED_MODELS) break;
  }
  return models.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
