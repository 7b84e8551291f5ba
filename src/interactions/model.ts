/** What an interaction is, as stored and as the API answers it. */
import type { Selectable } from 'kysely';
import type { InteractionTable } from '../db/schema.ts';
import type { ContentType, PromptRole } from './prompts.ts';

export const INTERACTION_STATUSES = ['draft', 'published', 'archived'] as const;

interface InlineTemplate {
  id?: string;
  name?: string;
  role: PromptRole;
  content: string;
  content_type: ContentType;
  /** Its top-level properties are the globals of a jst template. */
  inputSchema?: Record<string, unknown> | null;
}

export interface SegmentInput {
  type?: 'template' | 'chat';
  template?: string | InlineTemplate;
  configuration?: unknown;
}

export interface StoredSegment {
  id: string;
  type: 'template' | 'chat';
  template_id?: string;
  inline?: InlineTemplate & { name: string };
  configuration?: unknown;
}

/** Vertesia's CachePolicy (schemas.ts checks it; runs/result-cache.ts applies it). */
export interface CachePolicy {
  type: 'cache' | 'no_cache' | 'cache_and_refresh';
  ttl?: number;
  varies_on?: string[];
  refresh_probability?: number;
}

/**
 * Vertesia's RunDataStorageLevel. Orrery stores every run's content as STANDARD does; the other
 * levels are refused (schemas.ts) until restricted runs are applied.
 */
export type RunDataStorageLevel = 'STANDARD';

export interface InteractionInput {
  name?: string;
  endpoint?: string;
  description?: string | null;
  status?: string;
  prompts?: SegmentInput[];
  environment?: string | null;
  model?: string | null;
  model_options?: Record<string, unknown> | null;
  result_schema?: Record<string, unknown> | null;
  interaction_schema?: Record<string, unknown> | null;
  cache_policy?: CachePolicy | null;
  temperature?: number | null;
  max_tokens?: number | null;
  restriction?: RunDataStorageLevel | null;
  test_data?: unknown;
  tags?: string[];
  visibility?: 'public' | 'private';
  expected_edit_revision?: number;
}

export interface SegmentTemplateDto {
  id: string;
  name: string;
  role: PromptRole;
  content: string;
  content_type: ContentType;
  inputSchema?: Record<string, unknown>;
}

export interface SegmentDto {
  id: string;
  type: 'template' | 'chat';
  template?: SegmentTemplateDto;
  configuration?: unknown;
}

export interface InteractionDto {
  id: string;
  name: string;
  endpoint: string;
  description?: string;
  status: string;
  version: number;
  edit_revision: number;
  visibility: string;
  tags: string[];
  prompts: SegmentDto[];
  environment?: string;
  model?: string;
  model_options?: Record<string, unknown>;
  result_schema?: Record<string, unknown>;
  interaction_schema?: Record<string, unknown>;
  cache_policy?: CachePolicy;
  /** The interaction's own options: under its model_options, which win (runs/plan.ts). */
  temperature?: number;
  max_tokens?: number;
  restriction?: RunDataStorageLevel;
  test_data?: unknown;
  parent?: string;
  project: string;
  account: string;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export type InteractionRefDto = Pick<
  InteractionDto,
  | 'id'
  | 'name'
  | 'endpoint'
  | 'status'
  | 'version'
  | 'tags'
  | 'updated_at'
  | 'parent'
  | 'model'
  | 'description'
  | 'visibility'
>;

export type Row = Selectable<InteractionTable>;

/** The official client's InteractionSearchQuery (the fields Orrery filters on). */
export interface InteractionQuery {
  name?: string;
  status?: string | string[];
  tags?: string | string[];
  model?: string;
  environment?: string;
  limit?: number;
  offset?: number;
}

/** The official client's InteractionEndpointQuery. */
export interface EndpointQuery {
  limit?: number;
  offset?: number;
  status?: string;
  visibility?: string;
  version?: number;
  tags?: string[];
  includes?: string[];
  excludes?: string[];
  include_params_schema?: boolean;
  include_result_schema?: boolean;
}

export interface EndpointDto {
  id: string;
  name: string;
  endpoint: string;
  description?: string;
  status: string;
  visibility: string;
  version: number;
  tags: string[];
  params_schema?: Record<string, unknown>;
  result_schema?: Record<string, unknown>;
}

export interface ResolvedExecutionDto {
  id: string;
  name: string;
  version: number;
  status: string;
  tags: string[];
  resolved: { environment: { id: string; name: string; provider: string }; model?: string; model_source: string };
}

export type ExportedDto = InteractionRefDto & {
  result_schema?: Record<string, unknown>;
  prompts: {
    id: string;
    type: string;
    template?: { id: string; inputSchema?: Record<string, unknown> };
    configuration?: unknown;
  }[];
};

export interface CatalogEntryDto {
  type: 'stored' | 'draft';
  id: string;
  name: string;
  version: number;
  published: boolean;
}

/** The environment fields resolve needs. */
export interface EnvironmentInfo {
  id: string;
  name: string;
  provider: string;
  default_model?: string;
}

/** Every list answers at most this many items. */

/** Default endpoint: the name without spaces or characters a selector cannot carry. */
export const endpointOf = (name: string): string =>
  name
    .trim()
    .split(/\s+/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
    .replace(/[^A-Za-z0-9_.:-]/g, '')
    .slice(0, 128) || 'Interaction';
