/**
 * Vertesia's SchemaRefSchema: a `result_schema` may be `{ $uri: "store:<typeId>" }`, the JSON
 * Schema of an object type of the project. It is resolved where it is given (an interaction when
 * saved, a run when created), so that what is stored and what the provider is sent is the schema
 * itself; the type is read by the objects feature (wired in features.ts).
 */
import type { Principal } from '../auth/principal.ts';
import { BadRequest, NotFound } from '../util/errors.ts';

/** The object_schema of a type of the caller's project (null: the type has none); NotFound when there is no such type. */
export type ObjectTypeSchemas = (p: Principal, typeId: string) => Promise<Record<string, unknown> | null>;

const STORE = 'store:';

/** The `$uri` of a schema reference, or undefined when `schema` is a schema itself. */
function refOf(schema: unknown): unknown {
  return schema !== null && typeof schema === 'object' && !Array.isArray(schema) && '$uri' in schema
    ? (schema as { $uri: unknown }).$uri
    : undefined;
}

/**
 * `schema` itself, or the object type's schema it refers to: a 400 naming `field` and the type
 * when the reference is malformed, the type is not in the project, or has no schema.
 */
export async function resolveSchemaRef(
  p: Principal,
  field: string,
  schema: Record<string, unknown>,
  schemas: ObjectTypeSchemas | undefined,
): Promise<Record<string, unknown>> {
  const uri = refOf(schema);
  if (uri === undefined) return schema;
  if (Object.keys(schema).length > 1)
    throw new BadRequest(`${field} is a schema reference: it takes $uri alone, not ${Object.keys(schema).join(', ')}`);
  if (typeof uri !== 'string' || !uri.startsWith(STORE) || uri.length === STORE.length)
    throw new BadRequest(`${field}.$uri must be "store:<object type id>", got ${JSON.stringify(uri)}`);
  const typeId = uri.slice(STORE.length);
  if (!schemas) throw new BadRequest(`${field}.$uri ${JSON.stringify(uri)}: this server has no object types`);
  const found = await schemas(p, typeId).catch((err) => {
    if (err instanceof NotFound)
      throw new BadRequest(`${field}.$uri names object type ${typeId}, which this project does not have`);
    throw err;
  });
  if (!found) throw new BadRequest(`${field}.$uri names object type ${typeId}, which has no object_schema`);
  return found;
}
