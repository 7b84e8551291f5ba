/**
 * What a run cost, in USD, from its token usage and a price: the environment's own price for the
 * model (`config.prices`, USD per million tokens) or else the vendored table (prices.json, a
 * pruned, dated snapshot of LiteLLM's price table, USD per token; scripts/prune-prices.mjs).
 *
 * Token counts follow OpenAI: `prompt` is all the input tokens, cached ones included, and `result`
 * all the output tokens, reasoning ones included. So cached input is priced apart from the rest
 * of the input, and reasoning tokens apart from the rest of the output, never twice:
 *   input      = (prompt − cache_read − cache_write) × input price
 *   cache_read = cache_read × cache-read price (the input price when the table has none)
 *   cache_write= cache_write × cache-write price (the input price when the table has none)
 *   output     = (result − reasoning) × output price
 *   reasoning  = reasoning × reasoning price (the output price when the table has none)
 * Each part is rounded to 1e-9 USD; `total` is the sum of the parts. A model neither the
 * environment nor the table prices costs `null` (unknown, never zero).
 */
import { readFileSync } from 'node:fs';
import type { TokenUsage } from '../providers/driver.ts';

export interface RunCost {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  total: number;
  currency: 'USD';
  /** Which prices: `litellm <date>` (the vendored table) or `environment` (config.prices). */
  price_table: string;
}

/** One model's prices, USD per token. */
export interface TokenPrices {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
  reasoning?: number;
}

interface TableEntry {
  litellm_provider: string;
  input_cost_per_token: number;
  output_cost_per_token: number;
  cache_read_input_token_cost?: number;
  cache_creation_input_token_cost?: number;
  output_cost_per_reasoning_token?: number;
}

export interface PriceTable {
  header: { source: string; source_commit: string | null; date: string; licence: string };
  models: Record<string, TableEntry>;
}

let table: PriceTable | undefined;
let lowerKeys: Map<string, string> | undefined;

/** The vendored table, read once. */
export function priceTable(): PriceTable {
  table ??= JSON.parse(readFileSync(new URL('./prices.json', import.meta.url), 'utf8')) as PriceTable;
  return table;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Bedrock's cross-region inference profiles prefix the model id with a geography. */
const BEDROCK_GEO = /^(?:us|eu|apac|jp|au|ca|global|us-gov)\./;

/**
 * Per Orrery provider: the LiteLLM providers whose entries may price its models, and the keys to
 * try for a model id, in order (LiteLLM keys are bare for OpenAI, Anthropic, Bedrock and Gemini
 * on Vertex, prefixed for the others).
 */
const PROVIDERS: Readonly<Record<string, { litellm: readonly string[]; keys: (model: string) => string[] }>> = {
  openai: { litellm: ['openai', 'text-completion-openai'], keys: (m) => [m] },
  // An Azure deployment name is often not a model name: the Azure entry, else OpenAI's for the same name.
  azure_openai: { litellm: ['azure', 'openai'], keys: (m) => [prefixed('azure/', m), m] },
  azure_foundry: {
    litellm: ['azure_ai', 'azure', 'openai'],
    keys: (m) => [prefixed('azure_ai/', m), prefixed('azure/', m), m],
  },
  anthropic: { litellm: ['anthropic'], keys: (m) => [m] },
  bedrock: { litellm: ['bedrock', 'bedrock_converse'], keys: bedrockKeys },
  bedrock_mantle: {
    litellm: ['bedrock_mantle', 'bedrock', 'bedrock_converse'],
    keys: (m) => [prefixed('bedrock_mantle/', m), ...bedrockKeys(m)],
  },
  vertexai: {
    litellm: [
      'vertex_ai',
      'vertex_ai-language-models',
      'vertex_ai-anthropic_models',
      'vertex_ai-mistral_models',
      'vertex_ai-llama_models',
      'vertex_ai-deepseek_models',
      'vertex_ai-ai21_models',
      'vertex_ai-qwen_models',
      'vertex_ai-openai_models',
    ],
    keys: vertexKeys,
  },
  groq: { litellm: ['groq'], keys: (m) => [prefixed('groq/', m)] },
  togetherai: { litellm: ['together_ai'], keys: (m) => [prefixed('together_ai/', m)] },
  mistralai: { litellm: ['mistral'], keys: (m) => [prefixed('mistral/', m)] },
  xai: { litellm: ['xai'], keys: (m) => [prefixed('xai/', m)] },
  watsonx: { litellm: ['watsonx'], keys: (m) => [prefixed('watsonx/', m)] },
  // Replicate ids may pin a version (`owner/model:sha`); the price is the model's.
  replicate: {
    litellm: ['replicate'],
    keys: (m) => [prefixed('replicate/', m), prefixed('replicate/', m.replace(/:[^/]*$/, ''))],
  },
};

function prefixed(prefix: string, model: string): string {
  return model.startsWith(prefix) ? model : prefix + model;
}

function bedrockKeys(model: string): string[] {
  // An inference-profile or foundation-model ARN ends with the model id.
  const id = model.startsWith('arn:') ? model.slice(model.lastIndexOf('/') + 1) : model;
  return [id, id.replace(BEDROCK_GEO, '')];
}

function vertexKeys(model: string): string[] {
  // `[projects/P/][locations/R/]publishers/X/models/M`: the model is M.
  const m = /(?:^|\/)models\/([^/]+)$/.exec(model);
  const id = m ? m[1] : model.replace(/^vertex_ai\//, '');
  const unversioned = id.replace(/@[^@]*$/, '');
  return [`vertex_ai/${id}`, id, `vertex_ai/${unversioned}`, unversioned];
}

/** The table's entry for a provider's model, or undefined. */
export function tableEntry(provider: string, model: string): TableEntry | undefined {
  const p = PROVIDERS[provider];
  if (!p || !model) return undefined;
  const { models } = priceTable();
  lowerKeys ??= new Map(Object.keys(models).map((k) => [k.toLowerCase(), k]));
  for (const key of p.keys(model.trim())) {
    const found = Object.hasOwn(models, key) ? key : lowerKeys.get(key.toLowerCase());
    if (found !== undefined && p.litellm.includes(models[found].litellm_provider)) return models[found];
  }
  return undefined;
}

const PER_MILLION = 1e-6;
const price = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;

/**
 * The environment's price for a model, from `config.prices[model]`: `{input, output, cache_read?,
 * cache_write?, reasoning?}` in USD per million tokens. Undefined when absent or malformed.
 */
function environmentPrices(prices: unknown, model: string): TokenPrices | undefined {
  if (!isObject(prices) || !Object.hasOwn(prices, model)) return undefined;
  const p = prices[model];
  if (!isObject(p)) return undefined;
  const input = price(p.input);
  const output = price(p.output);
  if (input === undefined || output === undefined) return undefined;
  const opt = (k: string) => {
    const v = price(p[k]);
    return v === undefined ? {} : { [k]: v * PER_MILLION };
  };
  return {
    input: input * PER_MILLION,
    output: output * PER_MILLION,
    ...opt('cache_read'),
    ...opt('cache_write'),
    ...opt('reasoning'),
  };
}

const round = (usd: number): number => Math.round(usd * 1e9) / 1e9;
const count = (n: number | undefined): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

/** The cost of `usage` at `prices` (USD per token), named `priceTable`. */
export function priceUsage(usage: TokenUsage, prices: TokenPrices, priceTableName: string): RunCost {
  const cacheRead = count(usage.cache_read);
  const cacheWrite = count(usage.cache_write);
  const result = count(usage.result);
  const reasoning = Math.min(count(usage.reasoning), result);
  const uncached = Math.max(0, count(usage.prompt) - cacheRead - cacheWrite);
  const parts = {
    input: round(uncached * prices.input),
    output: round((result - reasoning) * prices.output),
    cache_read: round(cacheRead * (prices.cache_read ?? prices.input)),
    cache_write: round(cacheWrite * (prices.cache_write ?? prices.input)),
    reasoning: round(reasoning * (prices.reasoning ?? prices.output)),
  };
  const total = round(parts.input + parts.output + parts.cache_read + parts.cache_write + parts.reasoning);
  // Every key written out, not `{ ...parts, total }`: keys added after a spread cost a hidden class
  // per run (runs/search-index.ts, withColumns).
  return {
    input: parts.input,
    output: parts.output,
    cache_read: parts.cache_read,
    cache_write: parts.cache_write,
    reasoning: parts.reasoning,
    total,
    currency: 'USD',
    price_table: priceTableName,
  };
}

export interface CostQuery {
  /** The environment's provider id (openai, bedrock, vertexai, …). */
  provider: string | undefined;
  /** The model the run called. */
  model: string | undefined | null;
  usage: TokenUsage | undefined;
  /** The environment's `config.prices`. */
  prices?: unknown;
}

/** What a run cost; null when its usage is unknown or no price is known for its model. */
export function costOf(q: CostQuery): RunCost | null {
  if (!q.usage || !q.model) return null;
  const own = environmentPrices(q.prices, q.model);
  if (own) return priceUsage(q.usage, own, 'environment');
  const e = q.provider ? tableEntry(q.provider, q.model) : undefined;
  if (!e) return null;
  const prices: TokenPrices = {
    input: e.input_cost_per_token,
    output: e.output_cost_per_token,
    ...(e.cache_read_input_token_cost !== undefined ? { cache_read: e.cache_read_input_token_cost } : {}),
    ...(e.cache_creation_input_token_cost !== undefined ? { cache_write: e.cache_creation_input_token_cost } : {}),
    ...(e.output_cost_per_reasoning_token !== undefined ? { reasoning: e.output_cost_per_reasoning_token } : {}),
  };
  return priceUsage(q.usage, prices, `litellm ${priceTable().header.date}`);
}
