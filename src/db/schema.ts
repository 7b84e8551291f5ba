/**
 * Table shapes as Kysely sees them. JSON columns are `unknown` here: SQLite hands them back as
 * text and PostgreSQL as parsed values; the row mappers of each feature normalise (style K7).
 * Timestamps are ISO 8601 UTC strings on both backends, so they sort and compare the same way.
 */
import type { Generated } from 'kysely';

export interface AccountTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ProjectTable {
  id: string;
  account_id: string;
  name: string;
  namespace: string;
  description: string | null;
  settings: unknown;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  role: string;
  key_hash: string;
  key_hint: string;
  expires_at: string | null;
  created_by: string;
  created_at: string;
}

export interface SettingTable {
  key: string;
  value: string;
}

export interface EnvironmentTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  provider: string;
  description: string | null;
  endpoint_url: string | null;
  default_model: string | null;
  enabled_models: unknown;
  api_key_enc: string | null;
  apikey_hint: string | null;
  config: unknown;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface PromptTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  role: string;
  content: string;
  content_type: string;
  description: string | null;
  input_schema: unknown;
  tags: unknown;
  test_data: unknown;
  status: string;
  version: number;
  edit_revision: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface InteractionTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  endpoint: string;
  description: string | null;
  status: string;
  version: number;
  edit_revision: number;
  /** For a published version: the id of the draft it was published from. */
  parent_id: string | null;
  prompts: unknown;
  environment_id: string | null;
  model: string | null;
  model_options: unknown;
  result_schema: unknown;
  interaction_schema: unknown;
  test_data: unknown;
  tags: unknown;
  visibility: string;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface RunTable {
  id: string;
  account_id: string;
  project_id: string;
  interaction_id: string;
  environment_id: string | null;
  model_id: string | null;
  status: string;
  parent_id: string | null;
  finish_reason: string | null;
  execution_time: number | null;
  token_prompt: number | null;
  token_result: number | null;
  token_total: number | null;
  /** Denormalised for filters and facets without joins. */
  tags: unknown;
  created_at: string;
  updated_at: string;
  /** Everything else of the run: result, parameters, prompt, config, error, source, ttl, … */
  doc: unknown;
}

export interface RunTagTable {
  run_id: string;
  tag: string;
}

export interface Database {
  accounts: AccountTable;
  projects: ProjectTable;
  api_keys: ApiKeyTable;
  settings: SettingTable;
  environments: EnvironmentTable;
  prompts: PromptTable;
  interactions: InteractionTable;
  runs: RunTable;
  run_tags: RunTagTable;
}

export type { Generated };
