#!/usr/bin/env node
/**
 * Refreshes src/pricing/prices.json from LiteLLM's price table (MIT, src/pricing/LICENSE-litellm):
 * keeps the chat and completion models of the providers Orrery runs, and only the per-token prices.
 *
 *   node scripts/prune-prices.mjs <model_prices_and_context_window.json> --date <YYYY-MM-DD> [--commit <sha>] [--via <where>]
 *
 * The input is LiteLLM's `model_prices_and_context_window.json` (github.com/BerriAI/litellm, at the
 * root of the repository); `--date` is the day of that version, `--commit` the LiteLLM commit it
 * came from when known, `--via` where the copy was taken from when it was not LiteLLM's repository.
 * They land in the header, and `cost.price_table` of every run priced by the table names the date.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** LiteLLM provider names of the providers Orrery runs (src/pricing/cost.ts maps Orrery's ids to these). */
export const KEPT_PROVIDERS = new Set([
  'openai',
  'text-completion-openai',
  'azure',
  'azure_ai',
  'anthropic',
  'bedrock',
  'bedrock_converse',
  'bedrock_mantle',
  'vertex_ai',
  'vertex_ai-language-models',
  'vertex_ai-anthropic_models',
  'vertex_ai-mistral_models',
  'vertex_ai-llama_models',
  'vertex_ai-deepseek_models',
  'vertex_ai-ai21_models',
  'vertex_ai-qwen_models',
  'vertex_ai-openai_models',
  'groq',
  'together_ai',
  'mistral',
  'xai',
  'watsonx',
  'replicate',
]);
const KEPT_MODES = new Set(['chat', 'completion', 'responses']);
/** The fields kept, as LiteLLM names them (USD per token). */
const KEPT_FIELDS = [
  'input_cost_per_token',
  'output_cost_per_token',
  'cache_read_input_token_cost',
  'cache_creation_input_token_cost',
  'output_cost_per_reasoning_token',
];

function arg(name) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

const input = process.argv[2];
const commit = arg('--commit');
const via = arg('--via');
const date = arg('--date');
if (!input || input.startsWith('--') || !date || !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
  console.error(
    'usage: node scripts/prune-prices.mjs <model_prices_and_context_window.json> --date <YYYY-MM-DD> [--commit <sha>] [--via <where>]',
  );
  process.exit(2);
}

const table = JSON.parse(readFileSync(input, 'utf8'));
const models = {};
for (const key of Object.keys(table).sort()) {
  const e = table[key];
  if (!e || typeof e !== 'object' || !KEPT_PROVIDERS.has(e.litellm_provider) || !KEPT_MODES.has(e.mode)) continue;
  if (typeof e.input_cost_per_token !== 'number' || typeof e.output_cost_per_token !== 'number') continue;
  // Region-specific Bedrock keys (`bedrock/us-east-1/…`, commitment tiers) are not model ids a run names.
  if (key.startsWith('bedrock/') || key.startsWith('bedrock_converse/')) continue;
  const out = { litellm_provider: e.litellm_provider };
  for (const f of KEPT_FIELDS) if (typeof e[f] === 'number') out[f] = e[f];
  models[key] = out;
}

const header = {
  source: 'LiteLLM model_prices_and_context_window.json, https://github.com/BerriAI/litellm',
  source_commit: commit ?? null,
  ...(via ? { retrieved_via: via } : {}),
  date,
  licence: 'MIT, Copyright (c) 2023 Berri AI; see src/pricing/LICENSE-litellm',
  kept: 'chat/completion models of the providers Orrery runs; prices in USD per token; pruned by scripts/prune-prices.mjs',
};
// One model per line: small, and a refresh reads as a diff of the models whose prices changed.
const lines = Object.entries(models).map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
const text = `{\n  "header": ${JSON.stringify(header)},\n  "models": {\n${lines.join(',\n')}\n  }\n}\n`;
const target = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'pricing', 'prices.json');
writeFileSync(target, text);
console.log(`${Object.keys(models).length} models, ${Buffer.byteLength(text)} bytes → ${target}`);
