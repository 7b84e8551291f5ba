/**
 * A run as the OpenTelemetry GenAI semantic conventions spell it (`gen_ai.*`,
 * opentelemetry.io/docs/specs/semconv/gen-ai), with Orrery's own attributes (`orrery.*`). The
 * names are written out rather than imported from the conventions' incubating entry, as their
 * maintainers advise for attributes that are not stable yet.
 */
import type { Attributes } from '@opentelemetry/api';
import type { RunEnd, RunStart } from './hooks.ts';

/** Orrery's provider ids as `gen_ai.provider.name` values (the conventions' list where it has one). */
const PROVIDER_NAMES: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  azure_openai: 'azure.ai.openai',
  azure_foundry: 'azure.ai.inference',
  vertexai: 'gcp.vertex_ai',
  watsonx: 'ibm.watsonx.ai',
  bedrock: 'aws.bedrock',
  bedrock_mantle: 'aws.bedrock',
};

export const providerName = (provider: string): string =>
  Object.hasOwn(PROVIDER_NAMES, provider) ? PROVIDER_NAMES[provider] : provider;

/** Content recorded in an event, at most this many characters per side (prompt, answer). */
const MAX_CONTENT_CHARS = 64 * 1024;

export function startAttributes(s: RunStart): Attributes {
  return {
    'gen_ai.operation.name': s.operation,
    'gen_ai.provider.name': providerName(s.provider),
    'gen_ai.request.model': s.model,
    ...(typeof s.temperature === 'number' ? { 'gen_ai.request.temperature': s.temperature } : {}),
    ...(typeof s.maxTokens === 'number' ? { 'gen_ai.request.max_tokens': s.maxTokens } : {}),
    'orrery.provider': s.provider,
    'orrery.interaction.id': s.interaction,
    'orrery.environment.id': s.environment,
    'orrery.project.id': s.project,
    ...(s.parentRun ? { 'orrery.run.parent': s.parentRun } : {}),
  };
}

export function endAttributes(e: RunEnd): Attributes {
  return {
    'orrery.run.id': e.id,
    'orrery.run.status': e.status,
    // Orrery answers the completion: the run is the response.
    'gen_ai.response.id': e.responseId ?? e.id,
    ...(e.responseModel ? { 'gen_ai.response.model': e.responseModel } : {}),
    ...(typeof e.inputTokens === 'number' ? { 'gen_ai.usage.input_tokens': e.inputTokens } : {}),
    ...(typeof e.outputTokens === 'number' ? { 'gen_ai.usage.output_tokens': e.outputTokens } : {}),
    ...(e.finishReason ? { 'gen_ai.response.finish_reasons': [e.finishReason] } : {}),
    ...(typeof e.cost === 'number' ? { 'orrery.run.cost': e.cost, 'orrery.run.cost.currency': 'USD' } : {}),
    ...(e.cachedFrom ? { 'orrery.cache.hit': true } : {}),
    ...(e.error ? { 'error.type': e.error.code } : {}),
  };
}

const clip = (v: unknown): string => {
  const text = JSON.stringify(v ?? null);
  return text.length > MAX_CONTENT_CHARS ? `${text.slice(0, MAX_CONTENT_CHARS)}…` : text;
};

/** The prompt and the answer, as JSON text (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true only). */
export function contentEvent(messages: unknown, result: unknown): Attributes {
  return { 'gen_ai.input.messages': clip(messages), 'gen_ai.output.messages': clip(result) };
}
