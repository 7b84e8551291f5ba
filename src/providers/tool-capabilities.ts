/**
 * Which models call tools: a table of known model families per provider, vendored from llumiverse's
 * capability tables (`@llumiverse/common` src/capability: openai, anthropic, mistral, vertexai,
 * bedrock-models) and the providers' model pages (IBM's watsonx.ai chat models with tool calling),
 * overridable per environment with `config.capabilities.tools`.
 * Checked before any provider call, so a tool request to a model that cannot take one is a 4xx
 * that names it, not a silent answer without calls.
 */
import { OrreryError } from '../util/errors.ts';

/** A prefix of the model id (lower case, after any `org/` path), and whether that family calls tools. */
type Family = readonly [prefix: string, tools: boolean];

interface ProviderTable {
  families: readonly Family[];
  /** For a model no family names: aggregators and local servers serve models nobody can list. */
  unknown: boolean;
  /** Families match anywhere in the id rather than at its start (Bedrock's `publisher.model` ids). */
  contains?: boolean;
  /** Rewrites the id before matching (Bedrock: the cross-region prefix `us.`, `eu.`, … dropped). */
  normalise?: (id: string) => string;
}

/**
 * Bedrock Converse, from llumiverse's `getRuntimeToolSupport` (bedrock-models.ts): family
 * substrings of the model id, after any ARN path and the cross-region inference prefix.
 */
const BEDROCK: ProviderTable = {
  families: [
    ['anthropic.claude', true],
    ['ai21.jamba', true],
    ['ai21.jamba-instruct', false],
    ['amazon.nova', true],
    ['amazon.nova-canvas', false],
    ['amazon.nova-reel', false],
    ['amazon.nova-sonic', false],
    ['amazon.titan', false],
    ['cohere.command-r', true],
    ['meta.llama3-1', true],
    ['meta.llama3-2-11b', true],
    ['meta.llama3-2-90b', true],
    ['meta.llama4', true],
    ['qwen.qwen3-235b', true],
    ['qwen.qwen3-32b', true],
    ['deepseek.', true],
    ['deepseek.r1', false],
    ['openai.gpt-', true],
    ['gpt-oss-safeguard', false],
    ['xai.grok-', true],
    ['google.gemma-4', true],
    ['mistral.mistral-large', true],
    ['mistral.pixtral', true],
    ['twelvelabs.pegasus', true],
    ['writer.palmyra', true],
  ],
  unknown: false,
  contains: true,
  normalise: (id) => id.replace(/^(?:[a-z]{2}(?:-gov)?|apac|global)\./, ''),
};

/**
 * Bedrock Converse models that call tools but cannot stream those calls (ConverseStream), from
 * llumiverse's `tool_support_streaming` (bedrock-models.ts `getRuntimeToolSupport`); the longest
 * family wins, as above. Bedrock's Mantle endpoint streams the calls of every model with tools.
 */
const BEDROCK_STREAMING: ProviderTable = {
  families: [
    ['anthropic.claude', true],
    ['anthropic.claude-3-5-haiku', false],
    ['ai21.jamba', true],
    ['amazon.nova', true],
    ['cohere.command-r', true],
    ['meta.llama', false],
    ['qwen.', false],
    ['deepseek.', false],
    ['openai.gpt-', true],
    ['xai.grok-', true],
    ['google.gemma-', true],
    ['mistral.', false],
    ['twelvelabs.', false],
    ['writer.', false],
  ],
  unknown: false,
  contains: true,
  normalise: BEDROCK.normalise,
};

const OPENAI: ProviderTable = {
  families: [
    ['gpt', true],
    ['gpt-3.5', false],
    ['gpt-4', true],
    ['gpt-4o', true],
    ['gpt-4.1', true],
    ['gpt-4.5', true],
    ['gpt-5', true],
    ['gpt-oss', true],
    ['gpt-image', false],
    ['gpt-4o-audio', false],
    ['gpt-4o-realtime', false],
    ['gpt-4o-transcribe', false],
    ['gpt-4o-mini-tts', false],
    ['chatgpt-4o-latest', true],
    ['chatgpt-image', false],
    ['o1', true],
    ['o1-mini', false],
    ['o1-preview', false],
    ['o3', true],
    ['o4', true],
    ['dall-e', false],
    ['omni-moderation', false],
    ['text-moderation', false],
    ['text-embedding', false],
    ['whisper', false],
    ['tts', false],
    ['sora', false],
    ['davinci', false],
    ['babbage', false],
  ],
  unknown: false,
};

const TABLES: Record<string, ProviderTable> = {
  openai: OPENAI,
  // Azure deployments carry the names their owners gave them: the family is a guess at best.
  azure_openai: { families: OPENAI.families, unknown: true },
  openai_compatible: { families: [], unknown: true },
  azure_foundry: { families: OPENAI.families, unknown: true },
  huggingface_ie: { families: [], unknown: true },
  anthropic: {
    families: [
      ['claude', true],
      ['claude-2', false],
      ['claude-instant', false],
    ],
    unknown: false,
  },
  mistralai: {
    families: [
      ['mistral-moderation', false],
      ['mistral-ocr', false],
      ['mistral-embed', false],
      ['codestral-embed', false],
      ['voxtral-mini', false],
    ],
    unknown: true,
  },
  groq: {
    families: [
      ['whisper', false],
      ['distil-whisper', false],
      ['playai-tts', false],
      ['llama-guard', false],
      ['meta-llama/llama-guard', false],
      ['llama-prompt-guard', false],
    ],
    unknown: true,
  },
  togetherai: {
    families: [
      ['flux', false],
      ['stable-diffusion', false],
      ['m2-bert', false],
      ['bge-', false],
      ['llama-guard', false],
    ],
    unknown: true,
  },
  xai: {
    families: [
      ['grok', true],
      ['grok-2-image', false],
      ['grok-imagine', false],
    ],
    unknown: false,
  },
  bedrock: BEDROCK,
  bedrock_mantle: BEDROCK,
  // llumiverse's vertexai.ts; Orrery's Vertex driver runs the Google and Anthropic publishers.
  vertexai: {
    families: [
      ['gemini', true],
      ['gemini-2.0-flash-lite-001', false],
      ['gemini-2.5-flash-image', false],
      ['gemini-3.0-flash-image', false],
      ['gemini-3.0-pro-image', false],
      ['gemini-3.1-flash-image', false],
      ['gemini-omni-flash-preview', false],
      ['imagen', false],
      ['claude', true],
      ['claude-2', false],
      ['claude-instant', false],
    ],
    unknown: false,
  },
  // The chat API's tool calling, on the model families IBM lists it for; model ids are `org/name`.
  watsonx: {
    families: [
      ['granite-3', true],
      ['granite-4', true],
      ['granite-guardian', false],
      ['granite-embedding', false],
      ['llama-3-1', true],
      ['llama-3-2', true],
      ['llama-3-3', true],
      ['llama-4', true],
      ['llama-guard', false],
      ['mistral-large', true],
      ['mistral-medium', true],
      ['mistral-small', true],
    ],
    unknown: false,
  },
  test: { families: [['tools', true]], unknown: false },
};

/** Providers Orrery reaches by a text-only path: what the model is does not matter. */
const TEXT_ONLY: Record<string, string> = {
  replicate: "Replicate's predictions take a text prompt only",
};

/** Providers whose drivers send tools today; the others refuse them whatever the table says. */
const TOOL_PROVIDERS = Object.keys(TABLES);

/** The vendored answer for a model, before any environment override. */
export function knownToolSupport(provider: string, model: string): boolean {
  const table = TABLES[provider];
  return table ? lookUp(table, model) : false;
}

/** Whether a model that calls tools also streams its calls (only Bedrock's runtime has models that do not). */
function knownToolStreaming(provider: string, model: string): boolean {
  return provider === 'bedrock' ? lookUp(BEDROCK_STREAMING, model) : true;
}

function lookUp(table: ProviderTable, model: string): boolean {
  const raw = model.toLowerCase();
  const id = table.normalise ? table.normalise(raw.slice(raw.lastIndexOf('/') + 1)) : raw;
  const name = id.includes('/') ? id.slice(id.lastIndexOf('/') + 1) : id;
  const matches = (prefix: string) =>
    table.contains ? id.includes(prefix) : name.startsWith(prefix) || id.startsWith(prefix);
  let best: Family | undefined;
  for (const f of table.families) {
    if (matches(f[0]) && (!best || f[0].length > best[0].length)) best = f;
  }
  return best ? best[1] : table.unknown;
}

const isGenerationApi = (config: Record<string, unknown> | undefined) =>
  config?.api === 'generation' || config?.api === 'text_generation';

/**
 * `config.capabilities.tools` of an environment: `true`/`false` for all its models, or
 * `{"<model>": true|false}` for some. Undefined when the environment says nothing of the model.
 */
function overrideOf(config: Record<string, unknown> | undefined, model: string, envName: string): boolean | undefined {
  const caps = config?.capabilities;
  if (caps === undefined || caps === null) return undefined;
  const bad = () =>
    new OrreryError(
      'bad_request',
      400,
      `environment "${envName}": config.capabilities.tools must be true, false or an object of model ids to true/false`,
    );
  if (typeof caps !== 'object' || Array.isArray(caps)) throw bad();
  const tools = (caps as Record<string, unknown>).tools;
  if (tools === undefined) return undefined;
  if (typeof tools === 'boolean') return tools;
  if (typeof tools !== 'object' || tools === null || Array.isArray(tools)) throw bad();
  if (!Object.hasOwn(tools, model)) return undefined;
  const v = (tools as Record<string, unknown>)[model];
  if (typeof v !== 'boolean') throw bad();
  return v;
}

export interface ToolTarget {
  provider: string;
  /** The environment's name, for messages. */
  name: string;
  config?: Record<string, unknown>;
}

/**
 * Before a provider call that carries tools: the environment's override, else the vendored table
 * (`stream`: the call streams, and the model must stream its tool calls too). Refuses with
 * `tools_unsupported` (400) naming the model and what to do.
 */
export function assertCanCallTools(env: ToolTarget, model: string, stream = false): void {
  const textOnly =
    TEXT_ONLY[env.provider] ??
    (env.provider === 'watsonx' && isGenerationApi(env.config)
      ? "the environment uses watsonx.ai's text generation API (config.api), which takes no tools; use the chat API"
      : undefined);
  if (textOnly || !TOOL_PROVIDERS.includes(env.provider)) {
    throw new OrreryError(
      'tools_unsupported',
      400,
      `model "${model}" of environment "${env.name}" (${env.provider}) cannot call tools: ` +
        (textOnly ?? `Orrery does not send tools to the ${env.provider} provider`) +
        `; use an environment of ${TOOL_PROVIDERS.filter((p) => p !== 'test').join(', ')}`,
    );
  }
  const override = overrideOf(env.config, model, env.name);
  // An environment that says its model calls tools vouches for its streamed calls too.
  if (override === undefined && knownToolSupport(env.provider, model)) {
    if (!stream || knownToolStreaming(env.provider, model)) return;
    throw new OrreryError(
      'tools_unsupported',
      400,
      `model "${model}" of environment "${env.name}" (${env.provider}) cannot stream tool calls: ` +
        "Bedrock's ConverseStream takes no tools for it; run it without stream, choose a model that streams tool calls, " +
        'or set config.capabilities.tools on the environment if it can',
    );
  }
  if (override) return;
  throw new OrreryError(
    'tools_unsupported',
    400,
    `model "${model}" of environment "${env.name}" (${env.provider}) cannot call tools` +
      (override === false
        ? ' (the environment says so in config.capabilities.tools)'
        : '; choose a model that can, or set config.capabilities.tools on the environment if it can'),
  );
}
