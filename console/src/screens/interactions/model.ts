/**
 * The interactions screens' view of the API (types as Orrery answers them) and the pure helpers
 * they share: JSON schema checks, sample data from a schema, template variables.
 */
import { apiFetch, client } from '../../api/client.ts';

export const ROLES = ['system', 'user', 'assistant', 'safety', 'negative', 'mask', 'tool'] as const;
export const CONTENT_TYPES = ['handlebars', 'jst', 'text'] as const;
export type Role = (typeof ROLES)[number];
export type ContentType = (typeof CONTENT_TYPES)[number];

interface SegmentTemplate {
  id: string;
  name: string;
  role: Role;
  content: string;
  content_type: ContentType;
  inputSchema?: Record<string, unknown>;
}

interface Segment {
  id: string;
  type: 'template' | 'chat';
  template?: SegmentTemplate;
  configuration?: unknown;
}

export interface Interaction {
  id: string;
  name: string;
  endpoint: string;
  description?: string;
  status: string;
  version: number;
  edit_revision: number;
  tags: string[];
  prompts: Segment[];
  environment?: string;
  model?: string;
  result_schema?: Record<string, unknown>;
  interaction_schema?: Record<string, unknown>;
  test_data?: unknown;
  updated_at: string;
}

export interface InteractionRef {
  id: string;
  name: string;
  endpoint: string;
  status: string;
  version: number;
  tags: string[];
  updated_at: string;
  model?: string;
}

export interface PromptTemplate {
  id: string;
  name: string;
  role: Role;
  content: string;
  content_type: ContentType;
  description?: string;
  status: string;
  edit_revision: number;
  tags: string[];
  updated_at: string;
}

export interface Environment {
  id: string;
  name: string;
  provider: string;
  description?: string;
  endpoint_url?: string;
  default_model?: string;
  apikey_hint?: string;
  has_api_key: boolean;
  updated_at: string;
}

export interface Model {
  id: string;
  name: string;
  description?: string;
}

export interface Provider {
  id: string;
  name: string;
  description: string;
  test: boolean;
  requires_endpoint_url: boolean;
  requires_api_key: boolean;
}

export interface Rendered {
  id: string;
  name: string;
  role: string;
  content_type: string;
  rendered: string;
}

/* API calls: the official client where it has the method, apiFetch otherwise. */
const c = () => client() as any;
export const api = {
  environments: (): Promise<Environment[]> => c().environments.list(),
  createEnvironment: (body: Record<string, unknown>): Promise<Environment> => c().environments.create(body),
  updateEnvironment: (id: string, body: Record<string, unknown>): Promise<Environment> =>
    c().environments.update(id, body),
  models: (id: string): Promise<Model[]> => c().environments.listModels(id),
  providers: (): Promise<Provider[]> => apiFetch<Provider[]>('/providers'),
  interactions: (): Promise<InteractionRef[]> => c().interactions.list({ query: { limit: 1000 } }),
  interaction: (id: string): Promise<Interaction> => c().interactions.retrieve(id),
  createInteraction: (body: Record<string, unknown>): Promise<Interaction> => c().interactions.create(body),
  updateInteraction: (id: string, body: Record<string, unknown>): Promise<Interaction> =>
    c().interactions.update(id, body),
  publish: (id: string, body: { tags?: string[] }): Promise<Interaction> => c().interactions.publish(id, body),
  versions: (id: string): Promise<InteractionRef[]> => c().interactions.listVersions(id),
  prompts: (): Promise<PromptTemplate[]> => apiFetch<PromptTemplate[]>('/prompts', { query: { limit: 1000 } }),
  prompt: (id: string): Promise<PromptTemplate> => c().prompts.retrieve(id),
  createPrompt: (body: Record<string, unknown>): Promise<PromptTemplate> => c().prompts.create(body),
  updatePrompt: (id: string, body: Record<string, unknown>): Promise<PromptTemplate> => c().prompts.update(id, body),
  render: (id: string, data: Record<string, unknown>): Promise<Rendered> => c().prompts.render(id, data),
  /** A template as edited, not saved (the official client has no such call). */
  renderDraft: (body: Record<string, unknown>, model?: string): Promise<Omit<Rendered, 'id'>> =>
    apiFetch<Omit<Rendered, 'id'>>('/prompts/render', { method: 'POST', body, query: model ? { model } : undefined }),
};

/** The editor language of a template content type. */
export const languageOf = (t: ContentType) => (t === 'jst' ? 'javascript' : t === 'handlebars' ? 'handlebars' : 'text');

export const formatDate = (iso: string | undefined) => {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace('T', ' ').slice(0, 16);
};

const JSON_TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'];

/** Structural checks of a JSON schema (what is commonly wrong); the server compiles it again on save. */
function schemaProblems(s: unknown, path: string, out: string[]): void {
  if (typeof s === 'boolean') return;
  if (!s || typeof s !== 'object' || Array.isArray(s)) {
    out.push(`${path || 'the schema'} must be an object`);
    return;
  }
  const o = s as Record<string, unknown>;
  if (o.type !== undefined) {
    const types = Array.isArray(o.type) ? o.type : [o.type];
    for (const t of types)
      if (typeof t !== 'string' || !JSON_TYPES.includes(t))
        out.push(`${path}/type: ${JSON.stringify(t)} is not a JSON type (${JSON_TYPES.join(', ')})`);
  }
  if (o.properties !== undefined) {
    if (!o.properties || typeof o.properties !== 'object' || Array.isArray(o.properties))
      out.push(`${path}/properties must be an object`);
    else for (const [k, v] of Object.entries(o.properties)) schemaProblems(v, `${path}/properties/${k}`, out);
  }
  if (o.required !== undefined && !(Array.isArray(o.required) && o.required.every((r) => typeof r === 'string')))
    out.push(`${path}/required must be an array of property names`);
  if (o.items !== undefined && !Array.isArray(o.items)) schemaProblems(o.items, `${path}/items`, out);
}

/**
 * Parses a schema editor's text: empty is "no schema" (null); otherwise a JSON object that looks
 * like a JSON schema. Answers the value or the error to show.
 */
export function parseSchema(
  text: string,
): { value: Record<string, unknown> | null; error?: undefined } | { value?: undefined; error: string } {
  if (!text.trim()) return { value: null };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { error: `not valid JSON: ${(err as Error).message}` };
  }
  const problems: string[] = [];
  schemaProblems(v, '', problems);
  if (problems.length) return { error: `not a valid JSON schema: ${problems.slice(0, 3).join('; ')}` };
  return { value: v as Record<string, unknown> };
}

/** Parses sample data: a JSON object. */
export function parseData(
  text: string,
): { value: Record<string, unknown>; error?: undefined } | { value?: undefined; error: string } {
  if (!text.trim()) return { value: {} };
  try {
    const v = JSON.parse(text);
    if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: 'the sample data must be a JSON object' };
    return { value: v };
  } catch (err) {
    return { error: `not valid JSON: ${(err as Error).message}` };
  }
}

/** A sample value for a JSON schema: examples, default, enum, or a value of its type. */
function sampleOf(schema: unknown, name = '', depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 6) return null;
  const s = schema as Record<string, any>;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if (s.const !== undefined) return s.const;
  const type = Array.isArray(s.type) ? s.type[0] : (s.type ?? (s.properties ? 'object' : undefined));
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, unknown>))
        out[k] = sampleOf(v, k, depth + 1);
      return out;
    }
    case 'array':
      return s.items ? [sampleOf(s.items, name, depth + 1)] : [];
    case 'string':
      return name ? `example ${name}` : 'example';
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** Top-level variables a handlebars template reads (`{{name}}`, `{{#each items}}`), for sample data without a schema. */
function templateVariables(segments: { content: string; content_type: string }[]): string[] {
  const names = new Set<string>();
  for (const s of segments) {
    if (s.content_type !== 'handlebars') continue;
    for (const m of s.content.matchAll(/\{\{\{?\s*(?:[#^]\s*(?:if|unless|each|with)\s+)?([A-Za-z_$][\w$]*)/g)) {
      const n = m[1];
      if (!['else', 'this', 'if', 'unless', 'each', 'with', 'lookup', 'log'].includes(n)) names.add(n);
    }
  }
  return [...names];
}

/** Sample data for an interaction: its test data, else from its input schema, else from its templates' variables. */
export function sampleData(
  i: Pick<Interaction, 'test_data' | 'interaction_schema'>,
  segments: { content: string; content_type: string }[],
): Record<string, unknown> {
  if (i.test_data && typeof i.test_data === 'object' && !Array.isArray(i.test_data))
    return i.test_data as Record<string, unknown>;
  if (i.interaction_schema) {
    const v = sampleOf(i.interaction_schema);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  }
  return Object.fromEntries(templateVariables(segments).map((n) => [n, `example ${n}`]));
}

export const pretty = (v: unknown) => (v === undefined || v === null ? '' : JSON.stringify(v, null, 2));

/** "a, b ,c" → ["a","b","c"]. */
export const tagList = (text: string) => [
  ...new Set(
    text
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  ),
];
