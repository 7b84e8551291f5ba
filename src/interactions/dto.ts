/** How an interaction row is answered: whole (its segments' templates expanded) or as a reference. */
import { scopeOf, type Principal } from '../auth/principal.ts';
import type { ContentType, PromptRole, PromptService } from './prompts.ts';
import type {
  CachePolicy,
  InteractionDto,
  InteractionRefDto,
  Row,
  RunDataStorageLevel,
  SegmentDto,
  SegmentTemplateDto,
  StoredSegment,
} from './model.ts';

/** The interaction of a row as the API answers it, its prompt segments with their templates. */
export async function toInteraction(promptService: PromptService, p: Principal, r: Row): Promise<InteractionDto> {
  const stored = (r.prompts as StoredSegment[] | null) ?? [];
  const refs = [...new Set(stored.map((s) => s.template_id).filter((x): x is string => !!x))];
  const templates = new Map((await promptService.table.getMany(scopeOf(p), refs)).map((t) => [t.id, t]));
  const prompts: SegmentDto[] = stored.map((s) => {
    const t = s.template_id ? templates.get(s.template_id) : undefined;
    const template: SegmentTemplateDto | undefined = t
      ? {
          id: t.id,
          name: t.name,
          role: t.role as PromptRole,
          content: t.content,
          content_type: t.content_type as ContentType,
          ...(t.input_schema ? { inputSchema: t.input_schema as Record<string, unknown> } : {}),
        }
      : s.inline
        ? {
            id: s.inline.id ?? s.id,
            name: s.inline.name,
            role: s.inline.role,
            content: s.inline.content,
            content_type: s.inline.content_type,
            ...(s.inline.inputSchema ? { inputSchema: s.inline.inputSchema } : {}),
          }
        : undefined;
    return {
      id: s.id,
      type: s.type,
      ...(template ? { template } : {}),
      ...(s.configuration !== undefined ? { configuration: s.configuration } : {}),
    };
  });
  const j = <T>(v: unknown) => (v ?? null) as T | null;
  const modelOptions = j<Record<string, unknown>>(r.model_options);
  const resultSchema = j<Record<string, unknown>>(r.result_schema);
  const inputSchema = j<Record<string, unknown>>(r.interaction_schema);
  const testData = j(r.test_data);
  const cachePolicy = j<CachePolicy>(r.cache_policy);
  return {
    id: r.id,
    name: r.name,
    endpoint: r.endpoint,
    ...(r.description ? { description: r.description } : {}),
    status: r.status,
    version: r.version,
    edit_revision: r.edit_revision,
    visibility: r.visibility,
    tags: tagsOf(r),
    prompts,
    ...(r.environment_id ? { environment: r.environment_id } : {}),
    ...(r.model ? { model: r.model } : {}),
    ...(modelOptions ? { model_options: modelOptions } : {}),
    ...(resultSchema ? { result_schema: resultSchema } : {}),
    ...(inputSchema ? { interaction_schema: inputSchema } : {}),
    ...(cachePolicy ? { cache_policy: cachePolicy } : {}),
    ...(r.temperature !== null && r.temperature !== undefined ? { temperature: r.temperature } : {}),
    ...(r.max_tokens !== null && r.max_tokens !== undefined ? { max_tokens: r.max_tokens } : {}),
    ...(r.restriction ? { restriction: r.restriction as RunDataStorageLevel } : {}),
    ...(testData !== null ? { test_data: testData } : {}),
    ...(r.parent_id ? { parent: r.parent_id } : {}),
    project: r.project_id,
    account: r.account_id,
    created_by: r.created_by,
    updated_by: r.updated_by,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The short form of an interaction (lists, versions, forks). */
export function toInteractionRef(r: Row): InteractionRefDto {
  return {
    id: r.id,
    name: r.name,
    endpoint: r.endpoint,
    status: r.status,
    version: r.version,
    tags: tagsOf(r),
    updated_at: r.updated_at,
    ...(r.parent_id ? { parent: r.parent_id } : {}),
    ...(r.model ? { model: r.model } : {}),
    ...(r.description ? { description: r.description } : {}),
    visibility: r.visibility,
  };
}

/** An interaction row's tags. */
export function tagsOf(r: Row): string[] {
  return (r.tags as string[] | null) ?? [];
}
