/**
 * The `config` of Vertesia's two virtual providers, as its schemas shape it
 * (`packages/common/src/api-schemas/environment.ts`):
 *  - `virtual_lb`: `{entries: [{model, weight}], failover?}`
 *  - `virtual_mediator`: `{entries: [{model}], mediators?: [{model}], max_concurrent_requests?, model_options?}`
 * An entry's `model` names an environment of the project and one of its models:
 * `<environment id>::<model>`. Entries may not name another virtual environment (no cycles).
 */
import { BadRequest } from '../util/errors.ts';
import type { ProviderInfo } from '../providers/driver.ts';

const VIRTUAL_PROVIDERS = ['virtual_lb', 'virtual_mediator'] as const;
export type VirtualProvider = (typeof VIRTUAL_PROVIDERS)[number];

/** For the provider listing: they have no driver, they run through their entries. */
export const VIRTUAL_PROVIDER_INFO: readonly ProviderInfo[] = [
  {
    id: 'virtual_lb',
    name: 'Virtual: load balancer',
    test: false,
    requires_endpoint_url: false,
    requires_api_key: false,
    description:
      'Sends each run to one of config.entries [{model: "<environment id>::<model>", weight}] picked by weight; with config.failover, a failing entry is skipped for a cooldown (config.cooldown_ms, default 30000) and the next is tried.',
  },
  {
    id: 'virtual_mediator',
    name: 'Virtual: mediator',
    test: false,
    requires_endpoint_url: false,
    requires_api_key: false,
    description:
      'Runs every entry of config.entries [{model: "<environment id>::<model>"}] (config.max_concurrent_requests at once); config.mediators judge the answers and pick one, else the first success wins.',
  },
];

export const isVirtualProvider = (provider: string): provider is VirtualProvider =>
  (VIRTUAL_PROVIDERS as readonly string[]).includes(provider);

/** Bounds: a virtual run fans out to its entries, so their number drives work. */
const MAX_VIRTUAL_ENTRIES = 16;
const MAX_CONCURRENT = 16;
/** How long a failed entry of a failover balancer is skipped, unless config.cooldown_ms says. */
const DEFAULT_COOLDOWN_MS = 30_000;

export interface VirtualEntry {
  /** As written: `<environment id>::<model>`. */
  ref: string;
  environment: string;
  model: string;
  weight: number;
}

export interface VirtualConfig {
  provider: VirtualProvider;
  entries: VirtualEntry[];
  failover: boolean;
  cooldownMs: number;
  mediators: VirtualEntry[];
  maxConcurrent: number;
  /** Options of the mediator's call (temperature, max_tokens, …). */
  modelOptions: Record<string, unknown>;
}

/** Reads and checks a virtual environment's config; a 400 that says what to fix. */
export function parseVirtualConfig(provider: VirtualProvider, config: unknown): VirtualConfig {
  const c = (config && typeof config === 'object' && !Array.isArray(config) ? config : {}) as Record<string, unknown>;
  const entries = entryList(c.entries, 'config.entries', provider === 'virtual_lb');
  if (entries.length === 0)
    throw new BadRequest(
      `a ${provider} environment needs config.entries: [{model: "<environment id>::<model>"${provider === 'virtual_lb' ? ', weight: 1' : ''}}]`,
    );
  if (provider === 'virtual_lb' && !entries.some((e) => e.weight > 0))
    throw new BadRequest('config.entries: at least one entry needs a weight above 0');
  const mediators =
    provider === 'virtual_mediator' && c.mediators !== undefined
      ? entryList(c.mediators, 'config.mediators', false)
      : [];
  const max = c.max_concurrent_requests;
  if (max !== undefined && !(Number.isInteger(max) && (max as number) >= 1 && (max as number) <= MAX_CONCURRENT)) {
    throw new BadRequest(`config.max_concurrent_requests must be an integer from 1 to ${MAX_CONCURRENT}`);
  }
  const cooldown = c.cooldown_ms;
  if (cooldown !== undefined && !(typeof cooldown === 'number' && cooldown >= 0 && cooldown <= 3_600_000)) {
    throw new BadRequest('config.cooldown_ms must be a number of milliseconds from 0 to 3600000');
  }
  if (c.failover !== undefined && typeof c.failover !== 'boolean')
    throw new BadRequest('config.failover must be true or false');
  const options = c.model_options;
  if (options !== undefined && (!options || typeof options !== 'object' || Array.isArray(options)))
    throw new BadRequest('config.model_options must be an object');
  return {
    provider,
    entries,
    failover: c.failover === true,
    cooldownMs: typeof cooldown === 'number' ? cooldown : DEFAULT_COOLDOWN_MS,
    mediators,
    maxConcurrent: typeof max === 'number' ? max : entries.length,
    modelOptions: (options as Record<string, unknown> | undefined) ?? {},
  };
}

function entryList(value: unknown, where: string, weighted: boolean): VirtualEntry[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new BadRequest(`${where} must be an array of {model: "<environment id>::<model>"}`);
  if (value.length > MAX_VIRTUAL_ENTRIES)
    throw new BadRequest(`${where} holds ${value.length} entries; at most ${MAX_VIRTUAL_ENTRIES}`);
  return value.map((item, i) => {
    const ref = (item as { model?: unknown } | null)?.model;
    const sep = typeof ref === 'string' ? ref.indexOf('::') : -1;
    if (typeof ref !== 'string' || sep <= 0 || sep + 2 >= ref.length) {
      throw new BadRequest(`${where}[${i}].model must be "<environment id>::<model>", got ${JSON.stringify(ref)}`);
    }
    const weight = (item as { weight?: unknown }).weight;
    if (weighted && weight !== undefined && !(typeof weight === 'number' && Number.isFinite(weight) && weight >= 0)) {
      throw new BadRequest(`${where}[${i}].weight must be a number, 0 or more`);
    }
    return {
      ref,
      environment: ref.slice(0, sep),
      model: ref.slice(sep + 2),
      weight: typeof weight === 'number' ? weight : 1,
    };
  });
}
