/**
 * Which models take images and which take PDFs: a table of known model families per provider
 * (the providers' model pages and llumiverse's capability tables), overridable per environment
 * with `config.capabilities.images` / `config.capabilities.documents`. Read before any provider
 * call, so that a run never sends a model a kind it cannot read.
 */
import { BadRequest, OrreryError } from '../util/errors.ts';

export type MediaKindName = 'images' | 'documents';

/** A prefix of the model id (lower case) and what that family takes; the longest prefix wins. */
type Family = readonly [prefix: string, images: boolean, documents: boolean];

interface ProviderTable {
  families: readonly Family[];
  /** What a model no family names takes. */
  unknown: readonly [images: boolean, documents: boolean];
  /** Families match anywhere in the id (Bedrock's `publisher.model` ids, after a region prefix). */
  contains?: boolean;
}

const OPENAI_FAMILIES: readonly Family[] = [
  ['gpt-3.5', false, false],
  ['gpt-4', false, false],
  ['gpt-4-turbo', true, false],
  ['gpt-4-vision', true, false],
  ['gpt-4o', true, true],
  ['gpt-4o-audio', false, false],
  ['gpt-4o-realtime', false, false],
  ['gpt-4o-transcribe', false, false],
  ['gpt-4o-mini-tts', false, false],
  ['gpt-4.1', true, true],
  ['gpt-4.5', true, true],
  ['gpt-5', true, true],
  ['gpt-oss', false, false],
  ['chatgpt-4o', true, true],
  ['o1', true, true],
  ['o1-mini', false, false],
  ['o1-preview', false, false],
  ['o3', true, true],
  ['o3-mini', false, false],
  ['o4-mini', true, true],
];

const ANTHROPIC_FAMILIES: readonly Family[] = [
  ['claude', true, true],
  ['claude-2', false, false],
  ['claude-instant', false, false],
  // The Claude 3 models read images but not PDF documents.
  ['claude-3-opus', true, false],
  ['claude-3-sonnet', true, false],
  ['claude-3-haiku', true, false],
];

const OPENAI_SHAPED: ProviderTable = { families: OPENAI_FAMILIES, unknown: [true, false] };

const TABLES: Record<string, ProviderTable> = {
  openai: { families: OPENAI_FAMILIES, unknown: [false, false] },
  // Servers that speak OpenAI's API: an OpenAI model name is that model; any other is assumed to
  // read images (most local vision servers do) and not PDFs (few do).
  openai_compatible: OPENAI_SHAPED,
  azure_openai: OPENAI_SHAPED,
  azure_foundry: OPENAI_SHAPED,
  huggingface_ie: OPENAI_SHAPED,
  togetherai: OPENAI_SHAPED,
  groq: OPENAI_SHAPED,
  mistralai: {
    families: [
      ['pixtral', true, false],
      ['mistral-medium', true, false],
      ['mistral-small', true, false],
      ['mistral-large', false, false],
    ],
    unknown: [false, false],
  },
  xai: {
    families: [
      ['grok', false, false],
      ['grok-2-vision', true, false],
      ['grok-4', true, false],
    ],
    unknown: [false, false],
  },
  anthropic: { families: ANTHROPIC_FAMILIES, unknown: [false, false] },
  // Converse takes image and document blocks from these publishers' models.
  bedrock: {
    families: [
      ['anthropic.claude', true, true],
      ['anthropic.claude-v2', false, false],
      ['anthropic.claude-instant', false, false],
      ['amazon.nova', true, true],
      ['amazon.nova-micro', false, true],
      ['meta.llama3', false, true],
      ['meta.llama3-2-11b', true, true],
      ['meta.llama3-2-90b', true, true],
      ['meta.llama4', true, true],
      ['mistral.pixtral', true, true],
      ['mistral.mistral-large', false, true],
      ['cohere.command-r', false, true],
    ],
    unknown: [false, false],
    contains: true,
  },
  vertexai: {
    families: [['gemini', true, true], ['imagen', false, false], ...ANTHROPIC_FAMILIES],
    unknown: [false, false],
  },
  test: { families: [], unknown: [true, true] },
  // A virtual environment's entry is chosen at call time: its media go as they are, and an entry
  // whose model cannot read them answers with its provider's error.
  virtual_lb: { families: [], unknown: [true, true] },
  virtual_mediator: { families: [], unknown: [true, true] },
};

/** Providers with no media form: their drivers send text only. */
const NO_MEDIA: Record<string, string> = {
  replicate: "Replicate's predictions take a text prompt only",
  watsonx: 'Orrery sends watsonx.ai text only',
};

/** The vendored answer for a model, before any environment override. */
export function knownMediaSupport(provider: string, model: string, kind: MediaKindName): boolean {
  const table = TABLES[provider];
  if (!table) return false;
  const raw = model.toLowerCase();
  const id = raw.slice(raw.lastIndexOf('/') + 1);
  let best: Family | undefined;
  for (const f of table.families) {
    const hit = table.contains ? id.includes(f[0]) : id.startsWith(f[0]);
    if (hit && (!best || f[0].length > best[0].length)) best = f;
  }
  const [images, documents] = best ? [best[1], best[2]] : table.unknown;
  return kind === 'images' ? images : documents;
}

export interface MediaTarget {
  provider: string;
  /** The environment's name, for messages. */
  name: string;
  config?: Record<string, unknown> | null;
  model: string;
}

/**
 * `config.capabilities.<kind>` of the environment: `true`/`false` for all its models, or
 * `{"<model>": true|false}` for some. Undefined when it says nothing of the model.
 */
function overrideOf(target: MediaTarget, kind: MediaKindName): boolean | undefined {
  const caps = target.config?.capabilities;
  if (caps === undefined || caps === null || typeof caps !== 'object' || Array.isArray(caps)) return undefined;
  const v = (caps as Record<string, unknown>)[kind];
  if (v === undefined) return undefined;
  const bad = () =>
    new BadRequest(
      `environment "${target.name}": config.capabilities.${kind} must be true, false or an object of model ids to true/false`,
    );
  if (typeof v === 'boolean') return v;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad();
  if (!Object.hasOwn(v, target.model)) return undefined;
  const one = (v as Record<string, unknown>)[target.model];
  if (typeof one !== 'boolean') throw bad();
  return one;
}

/** Whether the target's model takes `kind`: the environment's override, else the vendored table. */
export function takes(target: MediaTarget, kind: MediaKindName): boolean {
  if (NO_MEDIA[target.provider]) return false;
  return overrideOf(target, kind) ?? knownMediaSupport(target.provider, target.model, kind);
}

/** Why a model takes no media of `kind`, for the 400 that refuses it. */
export function cannotTake(target: MediaTarget, kind: MediaKindName, param: string): OrreryError {
  const what = kind === 'images' ? 'an image' : 'a PDF document';
  const reason =
    NO_MEDIA[target.provider] ??
    (overrideOf(target, kind) === false
      ? `the environment says so in config.capabilities.${kind}`
      : `choose a model that does, or set config.capabilities.${kind} on the environment if it can`);
  return new OrreryError(
    'media_unsupported',
    400,
    `${param} is ${what}, and model "${target.model}" of environment "${target.name}" (${target.provider}) takes no ${kind}: ${reason}`,
  );
}

/**
 * Whether the provider's form takes an `https` input as a link it fetches itself: OpenAI-shaped
 * image parts and Anthropic's own API. Any other is sent the bytes, which Orrery fetches.
 */
export function takesUrl(provider: string, kind: 'image' | 'document'): boolean {
  if (provider === 'anthropic') return true;
  return kind === 'image' && (provider === 'openai' || TABLES[provider] === OPENAI_SHAPED);
}
