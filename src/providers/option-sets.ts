/**
 * Which model options a model takes, as llumiverse decides it (`@llumiverse/common`
 * src/options/openai.ts, src/schemas/model-options.ts, drivers/src/shared/claude-thinking.ts):
 * each model belongs to one option set (`_option_id`). A set names the options it takes; options a
 * model refuses but llumiverse drops quietly (sampling on OpenAI's reasoning models) are dropped
 * here too and recorded on the run; options of another provider's set are a 400 naming them.
 */
import { BadRequest } from '../util/errors.ts';

/** The reasoning and rendering options Orrery forwards beyond sampling. */
export interface ReasoningOptions {
  /** OpenAI's `reasoning_effort`; Claude's `output_config.effort`; Gemini's `thinkingLevel`. */
  effort?: string;
  /** Claude's `thinking: {type: "enabled", budget_tokens}`; Gemini's `thinkingBudget`. */
  thinking_budget_tokens?: number;
  /** Return the model's reasoning as a `thoughts` result part (never inside the answer text). */
  include_thoughts?: boolean;
  /** OpenAI's `detail` on image inputs. */
  image_detail?: 'low' | 'high' | 'auto';
  /** Claude's cache breakpoints (model_options.cache_enabled / cache_ttl, config.prompt_cache_mode). */
  prompt_cache?: { ttl?: '5m' | '1h'; required?: boolean };
  /** OpenAI's `prompt_cache_key` (config.prompt_cache_key). */
  prompt_cache_key?: string;
}

/** The run config's prompt-cache fields, as the caller wrote them. */
export interface PromptCacheConfig {
  mode?: unknown;
  key?: unknown;
}

/** OpenAI's own bound on a prompt_cache_key is not documented; Orrery keeps it to this many characters. */
const MAX_PROMPT_CACHE_KEY = 256;

/**
 * The option keys of llumiverse's text option sets (`@llumiverse/common` schemas/model-options.ts),
 * `_option_id` aside. Image and video generation sets are not here: Orrery does not serve them.
 */
const SETS: Record<string, readonly string[]> = {
  'text-fallback': [
    'max_tokens',
    'temperature',
    'top_p',
    'top_k',
    'presence_penalty',
    'frequency_penalty',
    'stop_sequence',
    'include_thoughts',
  ],
  'azure-foundry-chat': [
    'max_tokens',
    'temperature',
    'top_p',
    'presence_penalty',
    'frequency_penalty',
    'stop_sequence',
    'seed',
    'image_detail',
    'include_thoughts',
  ],
  'groq-deepseek-thinking': [
    'max_tokens',
    'temperature',
    'top_p',
    'presence_penalty',
    'frequency_penalty',
    'stop_sequence',
    'reasoning_format',
  ],
  'mistral-text': [
    'max_tokens',
    'temperature',
    'top_p',
    'presence_penalty',
    'frequency_penalty',
    'stop_sequence',
    'effort',
    'random_seed',
    'safe_prompt',
    'parallel_tool_calls',
    'tool_choice',
    'prompt_mode',
    'include_thoughts',
  ],
  'bedrock-converse': ['max_tokens', 'temperature', 'top_p', 'stop_sequence', 'include_thoughts', 'service_tier'],
  'bedrock-nova': ['max_tokens', 'temperature', 'top_p', 'stop_sequence', 'include_thoughts', 'service_tier'],
  'bedrock-mistral': ['max_tokens', 'temperature', 'top_p', 'stop_sequence', 'include_thoughts', 'service_tier'],
  'bedrock-ai21': ['max_tokens', 'temperature', 'top_p', 'stop_sequence', 'include_thoughts', 'service_tier'],
  'bedrock-cohere-command': ['max_tokens', 'temperature', 'top_p', 'stop_sequence', 'include_thoughts', 'service_tier'],
  'bedrock-claude': [
    'max_tokens',
    'temperature',
    'top_p',
    'stop_sequence',
    'top_k',
    'thinking_budget_tokens',
    'include_thoughts',
    'effort',
    'cache_enabled',
    'cache_ttl',
    'service_tier',
  ],
  'bedrock-palmyra': [
    'max_tokens',
    'temperature',
    'top_p',
    'stop_sequence',
    'min_tokens',
    'seed',
    'frequency_penalty',
    'presence_penalty',
    'service_tier',
  ],
  'bedrock-gpt-oss': [
    'max_tokens',
    'temperature',
    'top_p',
    'stop_sequence',
    'reasoning_effort',
    'frequency_penalty',
    'presence_penalty',
    'service_tier',
  ],
  'bedrock-twelvelabs-pegasus': ['temperature', 'max_tokens', 'service_tier'],
  'bedrock-mantle-responses': [
    'max_tokens',
    'temperature',
    'top_p',
    'effort',
    'reasoning_effort',
    'verbosity',
    'image_detail',
    'include_thoughts',
  ],
  'bedrock-mantle-chat-completions': [
    'max_tokens',
    'temperature',
    'top_p',
    'stop_sequence',
    'effort',
    'reasoning_effort',
    'include_thoughts',
  ],
  'bedrock-mantle-claude': [
    'max_tokens',
    'temperature',
    'top_p',
    'top_k',
    'stop_sequence',
    'effort',
    'thinking_budget_tokens',
    'include_thoughts',
    'cache_enabled',
    'cache_ttl',
  ],
  'openai-thinking': [
    'max_tokens',
    'stop_sequence',
    'effort',
    'reasoning_effort',
    'image_detail',
    'include_thoughts',
    'service_tier',
  ],
  'openai-text': [
    'max_tokens',
    'effort',
    'reasoning_effort',
    'temperature',
    'top_p',
    'presence_penalty',
    'frequency_penalty',
    'stop_sequence',
    'image_detail',
    'include_thoughts',
    'service_tier',
  ],
  'vertexai-claude': [
    'max_tokens',
    'temperature',
    'top_p',
    'top_k',
    'stop_sequence',
    'effort',
    'thinking_budget_tokens',
    'include_thoughts',
    'cache_enabled',
    'cache_ttl',
  ],
  'vertexai-gemini': [
    'max_tokens',
    'temperature',
    'top_p',
    'top_k',
    'stop_sequence',
    'presence_penalty',
    'frequency_penalty',
    'seed',
    'effort',
    'include_thoughts',
    'thinking_budget_tokens',
    'thinking_level',
    'service_tier',
    'flex',
    'image_aspect_ratio',
    'image_size',
    'person_generation',
    'prominent_people',
    'output_mime_type',
    'output_compression_quality',
  ],
  'vertexai-grok': ['max_tokens', 'temperature', 'top_p', 'stop_sequence'],
};

/** Options Orrery applies for a family of models, beyond sampling. */
type Family = 'openai' | 'claude' | 'gemini' | 'converse' | 'plain' | 'any';

/** Which extension options each family takes: another family's are a 400 naming them. */
const TAKES: Record<Family, ReadonlySet<keyof ReasoningOptions | 'reasoning_effort'>> = {
  openai: new Set(['effort', 'reasoning_effort', 'image_detail', 'include_thoughts']),
  claude: new Set(['effort', 'thinking_budget_tokens', 'include_thoughts']),
  gemini: new Set(['effort', 'thinking_budget_tokens', 'include_thoughts']),
  // Bedrock Converse returns reasoning (`reasoningContent`) for the models that reason.
  converse: new Set(['include_thoughts']),
  plain: new Set(),
  // The `test` provider simulates every family.
  any: new Set(['effort', 'reasoning_effort', 'thinking_budget_tokens', 'include_thoughts', 'image_detail']),
};
const EXTENSIONS = ['effort', 'reasoning_effort', 'thinking_budget_tokens', 'include_thoughts', 'image_detail'];
/**
 * Options of llumiverse's sets that Orrery does not apply: refused by name, never ignored, unless
 * they ask for the default (false, or the `auto` / `default` service tier).
 */
const NOT_APPLIED = [
  'service_tier',
  'flex',
  'thinking_level',
  'verbosity',
  'reasoning_format',
  'random_seed',
  'safe_prompt',
  'parallel_tool_calls',
  'prompt_mode',
  'min_tokens',
  'image_aspect_ratio',
  'image_size',
  'person_generation',
  'prominent_people',
  'output_mime_type',
  'output_compression_quality',
];
const asksDefault = (k: string, v: unknown) =>
  v === undefined || v === null || v === false || (k === 'service_tier' && (v === 'auto' || v === 'default'));
/** Orrery's own keys in model_options, taken with any option set. */
const ORRERY_KEYS = new Set(['_option_id', 'tool_definitions', 'tool_choice']);

const OPENAI_FAMILY = new Set([
  'openai',
  'openai_compatible',
  'azure_openai',
  'azure_foundry',
  'groq',
  'togetherai',
  'mistralai',
  'xai',
  'huggingface_ie',
]);

/** The model id without an `org/` path or a deployment prefix, lower case. */
const bare = (model: string) => (model.split('/').pop() ?? model).toLowerCase();

/** o1, o3, o4 and gpt-5 onwards, as llumiverse's isOpenAIReasoningModel (`gpt-5-chat` included, as there). */
function isOpenAIReasoningModel(model: string): boolean {
  const m = bare(model);
  if (/(^|[^a-z0-9])o[134](?:$|[-.])/.test(m)) return true;
  const gpt = /gpt-(\d+)/.exec(m);
  return gpt !== null && Number(gpt[1]) >= 5;
}

const isClaude = (model: string) => /claude/i.test(model);

/** The family and llumiverse option set of a model on a provider. */
function optionProfile(provider: string, model: string): { family: Family; set: string } {
  if (provider === 'test') return { family: 'any', set: 'text-fallback' };
  if (OPENAI_FAMILY.has(provider))
    return { family: 'openai', set: isOpenAIReasoningModel(model) ? 'openai-thinking' : 'openai-text' };
  if (provider === 'anthropic') return { family: 'claude', set: 'vertexai-claude' };
  if (provider === 'vertexai')
    return isClaude(model)
      ? { family: 'claude', set: 'vertexai-claude' }
      : { family: 'gemini', set: 'vertexai-gemini' };
  if (provider === 'bedrock' || provider === 'bedrock_mantle')
    return isClaude(model)
      ? { family: 'claude', set: 'bedrock-claude' }
      : { family: 'converse', set: 'bedrock-converse' };
  return { family: 'plain', set: 'text-fallback' };
}

/** Sampling options a model refuses and llumiverse leaves out rather than fail the call. */
const REASONING_DROPS = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty'] as const;
const THINKING_DROPS = ['temperature', 'top_p', 'top_k'] as const;

export interface OptionDecision {
  /** Whether Orrery's default temperature applies (a model that takes no temperature gets none). */
  takesTemperature: boolean;
  /** Sampling options to leave out: the caller set them, the model refuses them (recorded as `config.dropped`). */
  drops: ReadonlySet<string>;
  reasoning: ReasoningOptions;
}

/**
 * The reasoning options of merged model options, checked against the model's family, and what
 * the model refuses. `sources` are the model options as written (the interaction's, the
 * caller's `config.model_options`): one with an `_option_id` has its keys checked against that set.
 */
export function decideOptions(
  provider: string,
  model: string,
  merged: Record<string, unknown>,
  sources: readonly (Record<string, unknown> | null | undefined)[],
  cache: PromptCacheConfig = {},
): OptionDecision {
  const { family, set } = optionProfile(provider, model);
  for (const source of sources) checkOptionSet(source);
  for (const k of NOT_APPLIED)
    if (!asksDefault(k, merged[k])) throw new BadRequest(`model_options.${k} is not applied by Orrery; remove it`);
  const reasoning = reasoningOptions(merged, family);
  Object.assign(reasoning, promptCacheOptions(merged, cache, family, provider, model));
  if (merged.reasoning_effort !== undefined && merged.effort !== undefined && merged.reasoning_effort !== merged.effort)
    throw new BadRequest('model_options.effort and model_options.reasoning_effort differ; send one of them');
  for (const k of EXTENSIONS) {
    if (merged[k] === undefined || merged[k] === null) continue;
    if (!TAKES[family].has(k as keyof ReasoningOptions))
      throw new BadRequest(
        `model_options.${k} is not an option of ${provider} model "${model}" (its option set, ${set}, takes ${SETS[set]!.join(', ')}); remove it`,
      );
  }
  const efforts = FAMILY_EFFORTS[family];
  if (reasoning.effort && efforts && !efforts.includes(reasoning.effort))
    throw new BadRequest(`model_options.effort must be one of ${efforts.join(', ')} for ${provider} model "${model}"`);
  const budget = reasoning.thinking_budget_tokens;
  if (
    family === 'claude' &&
    budget !== undefined &&
    typeof merged.max_tokens === 'number' &&
    merged.max_tokens <= budget
  )
    throw new BadRequest(
      'max_tokens must be larger than model_options.thinking_budget_tokens: the thinking budget is part of max_tokens',
    );
  const drops = new Set<string>();
  const given = (k: string) => merged[k] !== undefined && merged[k] !== null;
  if (set === 'openai-thinking') for (const k of REASONING_DROPS) if (given(k)) drops.add(k);
  // Claude with extended thinking takes no sampling options (the API refuses a temperature but 1).
  const thinking = family === 'claude' && reasoning.thinking_budget_tokens !== undefined;
  if (thinking) for (const k of THINKING_DROPS) if (given(k)) drops.add(k);
  return { takesTemperature: set !== 'openai-thinking' && !thinking, drops, reasoning };
}

/**
 * Prompt caching asked for: Claude gets breakpoints (cache_enabled, or prompt_cache_mode auto or
 * required; `off` places none), OpenAI its prompt_cache_key. Each is a 400 on a model that has no
 * such thing, and `required` only where the provider reports cache writes (Claude).
 */
function promptCacheOptions(
  o: Record<string, unknown>,
  cache: PromptCacheConfig,
  family: Family,
  provider: string,
  model: string,
): ReasoningOptions {
  const out: ReasoningOptions = {};
  const claude = family === 'claude' || family === 'any';
  const enabled = o.cache_enabled;
  if (enabled !== undefined && enabled !== null && typeof enabled !== 'boolean')
    throw new BadRequest('model_options.cache_enabled must be true or false');
  const ttl = o.cache_ttl;
  if (ttl !== undefined && ttl !== null && ttl !== '5m' && ttl !== '1h')
    throw new BadRequest('model_options.cache_ttl must be "5m" or "1h"');
  const mode = cache.mode;
  if (mode !== undefined && mode !== null && mode !== 'auto' && mode !== 'off' && mode !== 'required')
    throw new BadRequest('config.prompt_cache_mode must be auto, off or required');
  if (!claude && (enabled === true || (ttl !== undefined && ttl !== null)))
    throw new BadRequest(
      `model_options.${enabled === true ? 'cache_enabled' : 'cache_ttl'} places Claude cache breakpoints; ${provider} model "${model}" has none (OpenAI caches long prompts on its own); remove it`,
    );
  if (mode === 'required' && !claude)
    throw new BadRequest(
      `config.prompt_cache_mode "required" needs a provider that reports cache writes (Claude); ${provider} model "${model}" does not`,
    );
  if (mode === 'off' && enabled === true)
    throw new BadRequest(
      'model_options.cache_enabled: true contradicts config.prompt_cache_mode "off"; send one of them',
    );
  const place = claude && (mode === 'auto' || mode === 'required' || (mode !== 'off' && enabled === true));
  if (place)
    out.prompt_cache = {
      ...(ttl === '5m' || ttl === '1h' ? { ttl } : {}),
      ...(mode === 'required' ? { required: true } : {}),
    };
  const key = cache.key;
  if (key !== undefined && key !== null) {
    if (typeof key !== 'string' || key === '' || key.length > MAX_PROMPT_CACHE_KEY)
      throw new BadRequest(`config.prompt_cache_key must be a string of 1 to ${MAX_PROMPT_CACHE_KEY} characters`);
    if (family !== 'openai' && family !== 'any')
      throw new BadRequest(
        `config.prompt_cache_key is OpenAI's prompt_cache_key; ${provider} model "${model}" takes none; remove it`,
      );
    out.prompt_cache_key = key;
  }
  return out;
}

/** With an `_option_id`, every key the caller sent must be one of that set's. */
function checkOptionSet(options: Record<string, unknown> | null | undefined): void {
  const id = options?._option_id;
  if (id === undefined) return;
  if (typeof id !== 'string' || !SETS[id])
    throw new BadRequest(
      `model_options._option_id "${String(id)}" is not a text option set; use one of ${Object.keys(SETS).join(', ')}, or leave it out`,
    );
  const keys = new Set(SETS[id]);
  for (const k of Object.keys(options!)) {
    if (ORRERY_KEYS.has(k) || keys.has(k)) continue;
    throw new BadRequest(
      `model_options.${k} is not an option of the ${id} option set (it takes ${[...keys].join(', ')}); remove it`,
    );
  }
}

/** The efforts each family's API takes (llumiverse's option sets); the others take llumiverse's whole list. */
const FAMILY_EFFORTS: Partial<Record<Family, readonly string[]>> = {
  claude: ['low', 'medium', 'high', 'xhigh', 'max'],
  gemini: ['minimal', 'low', 'medium', 'high'],
};

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);

function reasoningOptions(o: Record<string, unknown>, family: Family): ReasoningOptions {
  const out: ReasoningOptions = {};
  const effort = o.effort ?? o.reasoning_effort;
  if (effort !== undefined && effort !== null) {
    if (typeof effort !== 'string' || !EFFORTS.has(effort))
      throw new BadRequest(`model_options.effort must be one of ${[...EFFORTS].join(', ')}`);
    out.effort = effort;
  }
  const budget = o.thinking_budget_tokens;
  if (budget !== undefined && budget !== null) {
    // Claude's floor is 1,024; Gemini takes 0 (no thinking) and -1 (the model decides).
    const floor = family === 'gemini' ? -1 : 1024;
    if (!Number.isInteger(budget) || (budget as number) < floor || (budget as number) > 1_000_000)
      throw new BadRequest(`model_options.thinking_budget_tokens must be an integer from ${floor} to 1000000`);
    out.thinking_budget_tokens = budget as number;
  }
  const thoughts = o.include_thoughts;
  if (thoughts !== undefined && thoughts !== null) {
    if (typeof thoughts !== 'boolean') throw new BadRequest('model_options.include_thoughts must be true or false');
    out.include_thoughts = thoughts;
  }
  const detail = o.image_detail;
  if (detail !== undefined && detail !== null) {
    if (detail !== 'low' && detail !== 'high' && detail !== 'auto')
      throw new BadRequest('model_options.image_detail must be low, high or auto');
    out.image_detail = detail;
  }
  return out;
}
