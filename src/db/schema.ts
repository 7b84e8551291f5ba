/**
 * Table shapes as Kysely sees them. JSON columns are `unknown` here: SQLite hands them back as
 * text and PostgreSQL as parsed values; the row mappers of each feature normalise (style K7).
 * Timestamps are ISO 8601 UTC strings on both backends, so they sort and compare the same way.
 */
import type { Generated } from 'kysely';

interface AccountTable {
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
  /** 1, or 0 for a disabled key (0012): refused at authentication. */
  enabled: Generated<number>;
  /** The key's own rate limits and quotas (0020), JSON; null for none. */
  limits?: unknown;
}

/** Usage per subject and window (0020), for rate limits and quotas; see src/limits. */
interface UsageCounterTable {
  subject: string;
  /** `m:<minute since the epoch>` or `d:<UTC day>`. */
  bucket: string;
  requests: Generated<number>;
  tokens: Generated<number>;
  cost: Generated<number>;
  expires_at: string;
}

interface SettingTable {
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
  /** 0011: the prompt this one was forked from. */
  forked_from: string | null;
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
  /** Vertesia's CachePolicy (0010); null: no caching. */
  cache_policy: unknown;
  /** 0041: the interaction's own temperature and max_tokens, and its RunDataStorageLevel. */
  temperature: number | null;
  max_tokens: number | null;
  restriction: string | null;
  visibility: string;
  /** 0011: the interaction (draft or version) this draft was forked from. */
  forked_from: string | null;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

/** 0010: answers kept by interactions' cache_policy, one per (project, key). */
interface RunCacheTable {
  project_id: string;
  key: string;
  account_id: string;
  run_id: string;
  result: unknown;
  finish_reason: string | null;
  created_at: string;
  expires_at: string;
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
  /**
   * Search data (0003), derived from `doc` and written with it by runs/store.ts; never part of a
   * run as answered. `search_fields`: the `parameters.*`, `config.*`, `source.*` values by path.
   * SQLite: `search_rowid` keys the `runs_fts` row. PostgreSQL: `search_tsv` is the tsvector.
   */
  search_fields?: unknown;
  search_rowid?: number;
  search_tsv?: unknown;
  /** `doc.interaction.name` and `doc.environment.name` (0003), so `interaction:X` stays in an index. */
  interaction_name?: string | null;
  environment_name?: string | null;
  /** `doc.cost.total` (0009), USD, so `cost.total` ranges and facets read a column. */
  cost_total?: number | null;
  /** The replica executing the run (0004), to detect a run whose executor died. */
  executor?: string | null;
  /** `created_at` + `ttl` (0019) when the run has a ttl: the retention sweeper deletes it after. */
  expires_at?: string | null;
  /** The OpenTelemetry trace and span of the run (0026); null when it was not traced. */
  trace_id?: string | null;
  span_id?: string | null;
  /** `doc.previous_run` (0028): the run this one continues, so a conversation's runs are found by index. */
  previous_run?: string | null;
}

interface ReplicaTable {
  id: string;
  host: string;
  started_at: string;
  heartbeat_at: string;
  /** `<pid namespace>/<pid>` of the replica's process on `host`; NULL where unknown (cluster/replicas.ts). */
  process: string | null;
}

interface RunChunkTable {
  run_id: string;
  seq: number;
  text: string;
}

interface RunTagTable {
  run_id: string;
  tag: string;
  /** SQLite (0003): the run's `search_rowid`, so a tag's runs are counted from indexes alone. */
  search_rowid?: number | null;
}

export interface BlobTable {
  project_id: string;
  /** The object key inside the project's bucket (the storage URI's path). */
  key: string;
  account_id: string;
  size: number;
  etag: string;
  content_type: string;
  /** The file name given when the upload URL was asked for. */
  name: string;
  created_at: string;
  updated_at: string;
  /** `files.setFileMetadata` (0015): a JSON map of strings, null until set. Read apart (blobs/store.ts). */
  custom_metadata: Generated<unknown>;
}

export interface ObjectTypeTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  edit_revision: number;
  /** tags, object_schema, table_layout, is_chunkable, strict_mode, status, … */
  doc: unknown;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface ObjectTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  status: string;
  type_id: string | null;
  parent_id: string | null;
  location: string;
  external_id: string | null;
  /** `content.source` (a storage URI), as a column: filtered on, and counted on blob deletes. */
  content_source: string | null;
  run_id: string | null;
  content: unknown;
  tags: unknown;
  properties: unknown;
  metadata: unknown;
  tokens: unknown;
  text: string | null;
  text_etag: string | null;
  /** (`embeddings` was dropped in 0007: an object's embeddings are its `vectors` rows.) */
  parts: unknown;
  transcript: unknown;
  /** Why content processing failed (0005): `{code, message, step}`, null otherwise. */
  error: unknown;
  etag: string;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
  /** Revisions (0014): the id of the first object of the history (its own id when it has none). */
  revision_root: string | null;
  /** The revision this one was made from (null for the first). */
  revision_parent: string | null;
  /** 1 for the newest revision of a history (every object without revisions), 0 for earlier ones. */
  revision_head: Generated<number>;
  revision_label: string | null;
  /** Now + `ttl` (0019) when the object was written with a ttl: the retention sweeper deletes it after. */
  expires_at?: string | null;
}

/** The audit trail (0018); see src/audit. */
interface AuditEventTable {
  id: string;
  account_id: string;
  project_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  event_category: string;
  principal_type: string;
  principal_id: string;
  role: string;
  request_id: string | null;
  ip: string | null;
  details: unknown;
  created_at: string;
}

/** The durable job queue (0005); see src/jobs/queue.ts. */
export interface JobTable {
  id: string;
  kind: string;
  account_id: string;
  project_id: string;
  subject: string;
  payload: unknown;
  /** 'queued' or 'running'; a finished job is deleted. */
  state: string;
  attempts: number;
  max_attempts: number;
  run_after: string;
  lease_until: string | null;
  lease_owner: string | null;
  lease_token: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** Runs started by POST /execute/async (0030): their durable checkpoint; see src/runs/async.ts. */
/** An agent (0031, src/agents): its run is `run_id`; `spec` is what it was asked, as JSON. */
interface AgentRunTable {
  run_id: string;
  account_id: string;
  project_id: string;
  spec: unknown;
  /** `running`, `waiting` (an interactive agent between turns) or `ended`. */
  state: string;
  /** 1 once it was asked to stop. */
  stop_requested: number;
  deadline_at: string;
  created_at: string;
  updated_at: string;
}

/** A step of an agent (0031): a model call, a tool call or a wait, written before and after it. */
interface AgentStepTable {
  run_id: string;
  seq: number;
  account_id: string;
  project_id: string;
  /** `model`, `tool` or `wait`. */
  kind: string;
  /** `started`, `done` or `failed`. */
  status: string;
  /** How many times it was started (a step in flight at a crash runs at most twice). */
  attempts: number;
  idempotency_key: string;
  input: unknown;
  output: unknown;
  started_at: string;
  ended_at: string | null;
}

/** A remote MCP server of a project (0031): its headers sealed with the server secret. */
interface McpServerTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  url: string;
  headers_enc: string | null;
  /** The names of its headers (their values only in headers_enc). */
  header_names: unknown;
  created_at: string;
  updated_at: string;
}

export interface AsyncRunTable {
  run_id: string;
  account_id: string;
  project_id: string;
  /** How many times its provider call was started. */
  attempts: number;
  /** 1 once its cancellation was asked. */
  cancel_requested: number;
  notify_endpoints: unknown;
  created_at: string;
  updated_at: string;
  /** When its provider call first started (0035): its run timeout counts from there. */
  started_at: string | null;
  /** The reason given with its cancellation (0035). */
  cancel_reason: string | null;
}

/** Webhook subscriptions of a project (0035, src/events). */
export interface EventSubscriptionTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  filter: unknown;
  url: string;
  /** The signing key, encrypted with the server's key. */
  secret: string;
  run_as_role: string;
  enabled: number;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

/** One event sent to one target (0035, src/events): its id is the delivery's `webhook-id`. */
export interface EventDeliveryTable {
  id: string;
  account_id: string;
  project_id: string;
  event_id: string;
  /** `sub:<subscription id>` or `notify:<url>`: one delivery per event and target. */
  target: string;
  subscription_id: string | null;
  url: string;
  body: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  response_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

/** Image renditions of objects (0005); bytes in blob storage, see src/content/renditions.ts. */
export interface ObjectRenditionTable {
  object_id: string;
  name: string;
  account_id: string;
  project_id: string;
  id: string;
  format: string;
  max_hw: number;
  status: string;
  error: string | null;
  blob_key: string | null;
  content_type: string | null;
  width: number | null;
  height: number | null;
  size: number | null;
  etag: string | null;
  source_etag: string;
  created_at: string;
}

/** Embeddings of objects and runs (0006); see src/embeddings/store.ts. */
interface VectorTable {
  account_id: string;
  project_id: string;
  /** 'object' or 'run'. */
  owner_kind: string;
  owner_id: string;
  /** text, image, properties (objects); input, result (runs). */
  type: string;
  model: string;
  dimensions: number;
  /** Hash of the source the vector was computed (or, for a caller's vector, set) for. */
  etag: string;
  /** The etag a caller gave with a vector it set (0007); null for computed vectors. */
  caller_etag: string | null;
  /** Little-endian float32, L2-normalised. */
  vector: Uint8Array;
  created_at: string;
  updated_at: string;
}

/** Collections of content objects (0013); see src/collections. */
export interface CollectionTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  status: string;
  /** 1 when the members are the objects matching `query`, 0 when they are explicit rows. */
  dynamic: number;
  type_id: string | null;
  query: unknown;
  tags: unknown;
  properties: unknown;
  doc: unknown;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

interface CollectionMemberTable {
  collection_id: string;
  object_id: string;
  account_id: string;
  project_id: string;
  added_at: string;
}

interface CollectionParentTable {
  parent_id: string;
  child_id: string;
  account_id: string;
  project_id: string;
  added_at: string;
}

export interface Database {
  event_subscriptions: EventSubscriptionTable;
  event_deliveries: EventDeliveryTable;
  accounts: AccountTable;
  projects: ProjectTable;
  api_keys: ApiKeyTable;
  settings: SettingTable;
  environments: EnvironmentTable;
  prompts: PromptTable;
  interactions: InteractionTable;
  runs: RunTable;
  run_cache: RunCacheTable;
  run_tags: RunTagTable;
  replicas: ReplicaTable;
  run_chunks: RunChunkTable;
  blobs: BlobTable;
  object_types: ObjectTypeTable;
  objects: ObjectTable;
  audit_events: AuditEventTable;
  usage_counters: UsageCounterTable;
  jobs: JobTable;
  async_runs: AsyncRunTable;
  agent_runs: AgentRunTable;
  agent_steps: AgentStepTable;
  mcp_servers: McpServerTable;
  object_renditions: ObjectRenditionTable;
  vectors: VectorTable;
  collections: CollectionTable;
  collection_members: CollectionMemberTable;
  collection_parents: CollectionParentTable;
}
