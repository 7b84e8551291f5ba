/**
 * An interaction's parameters schema. In Vertesia the schema usually lives on the prompt segments
 * (each template's `inputSchema`), merged as `mergeInCodePromptSchemas` merges them
 * (`packages/common/src/utils/schemas.ts` in vertesia/composableai): the union of their
 * properties and of their required names. A template that closes its schema
 * (`additionalProperties: false`) closes the merged one: extra fields are refused.
 */
type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The merged schema of the templates' `inputSchema`s; null when none has properties. */
export function mergedPromptSchema(templates: readonly ({ inputSchema?: unknown } | undefined)[]): Schema | null {
  const properties: Schema = {};
  const required = new Set<string>();
  let closed = false;
  for (const t of templates) {
    const s = t?.inputSchema;
    if (!isObject(s) || !isObject(s.properties)) continue;
    Object.assign(properties, s.properties);
    if (Array.isArray(s.required)) for (const r of s.required) if (typeof r === 'string') required.add(r);
    if (s.additionalProperties === false) closed = true;
  }
  if (Object.keys(properties).length === 0) return null;
  return {
    type: 'object',
    properties,
    ...(required.size ? { required: [...required] } : {}),
    ...(closed ? { additionalProperties: false } : {}),
  };
}

/**
 * What a caller's data is described by: the interaction's own schema, with the prompts' merged
 * properties beside its own (its own win a name both have).
 */
export function paramsSchemaOf(interactionSchema: unknown, merged: Schema | null): Schema | null {
  if (!isObject(interactionSchema)) return merged;
  if (!merged) return interactionSchema;
  const own = isObject(interactionSchema.properties) ? interactionSchema.properties : {};
  const required = new Set([
    ...((merged.required as string[] | undefined) ?? []),
    ...(Array.isArray(interactionSchema.required) ? (interactionSchema.required as string[]) : []),
  ]);
  return {
    ...interactionSchema,
    properties: { ...(merged.properties as Schema), ...own },
    ...(required.size ? { required: [...required] } : {}),
  };
}
