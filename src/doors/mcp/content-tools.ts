/**
 * The built-in tools over a project's content objects: full-text search, similarity search and
 * reading an object's text, each bounded (docs/reference/limits.md) and answered as MCP content:
 * a JSON summary the model reads, and a resource link per object (`orrery://objects/<id>`).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import type { ObjectService } from '../../objects/service.ts';
import type { ObjectListing } from '../../objects/listing.ts';
import type { ObjectSimilarity } from '../../objects/similarity.ts';
import type { ObjectRecord } from '../../objects/model.ts';
import { ToolInputError, argumentsOf, integerIn, optionalString, requiredString } from './arguments.ts';
import { objectUri } from './uris.ts';
import type { BuiltInTool, ToolAnswer } from './tool-model.ts';

/** The slices of the object feature these tools read through (its services, never its tables). */
export interface ContentReads {
  objects: Pick<ObjectService, 'get' | 'text'>;
  listing: Pick<ObjectListing, 'search'>;
  similarity: Pick<ObjectSimilarity, 'search'>;
}

const MAX_QUERY = 1000;
const MAX_SIMILAR_TEXT = 4000;
const MAX_ID = 200;
const MAX_RESULTS = 50;
const DEFAULT_RESULTS = 10;
const MAX_OFFSET = 1000;
const MAX_READ_CHARS = 100_000;
const DEFAULT_READ_CHARS = 20_000;

const ID = { type: 'string', minLength: 1, maxLength: MAX_ID } as const;
const LIMIT = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_RESULTS,
  default: DEFAULT_RESULTS,
  description: `How many objects to answer (1 to ${MAX_RESULTS})`,
} as const;

/** The summary of a found object a model reads. */
const FOUND_ITEM = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    uri: { type: 'string' },
    type: { type: ['string', 'null'] },
    status: { type: 'string' },
    location: { type: 'string' },
    score: { type: 'number' },
    updated_at: { type: 'string' },
  },
  required: ['id', 'name', 'uri'],
} as const;
const FOUND = {
  type: 'object',
  properties: { results: { type: 'array', items: FOUND_ITEM } },
  required: ['results'],
} as const;

const SEARCH_OBJECTS = 'search_objects';
const SIMILAR_OBJECTS = 'similar_objects';
const READ_OBJECT = 'read_object';

export function contentTools(reads: ContentReads): BuiltInTool[] {
  return [
    {
      permission: 'content:read',
      definition: {
        name: SEARCH_OBJECTS,
        title: 'Search content objects',
        description:
          "Full-text search over the project's content objects (names, descriptions, properties and extracted text), best match first.",
        inputSchema: {
          type: 'object',
          properties: {
            query: { type: 'string', minLength: 1, maxLength: MAX_QUERY, description: 'The words to find' },
            type: { type: 'string', maxLength: MAX_ID, description: 'Only objects of this type (its id or name)' },
            location: { type: 'string', maxLength: MAX_QUERY, description: 'Only objects at this location' },
            limit: LIMIT,
            offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 },
          },
          required: ['query'],
          additionalProperties: false,
        },
        outputSchema: FOUND as unknown as Tool['outputSchema'],
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      call: async (p, raw) => {
        const args = argumentsOf(SEARCH_OBJECTS, raw, ['query', 'type', 'location', 'limit', 'offset']);
        const fullText = requiredString(args, 'query', MAX_QUERY);
        const type = optionalString(args, 'type', MAX_ID);
        const location = optionalString(args, 'location', MAX_QUERY);
        const found = await reads.listing.search(p, {
          fullText,
          ...(type ? { types: [type] } : {}),
          ...(location ? { location } : {}),
          limit: integerIn(args, 'limit', 1, MAX_RESULTS, DEFAULT_RESULTS),
          offset: integerIn(args, 'offset', 0, MAX_OFFSET, 0),
        });
        return foundAnswer(found.results);
      },
    },
    {
      permission: 'content:read',
      definition: {
        name: SIMILAR_OBJECTS,
        title: 'Find similar content objects',
        description:
          'Similarity search over the text embeddings of content objects: the objects closest in meaning to a text, or to another object (give exactly one of text and object_id).',
        inputSchema: {
          type: 'object',
          properties: {
            text: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_SIMILAR_TEXT,
              description: 'What to find objects like',
            },
            object_id: { ...ID, description: 'The id of an object to find objects like' },
            limit: LIMIT,
          },
          additionalProperties: false,
        },
        outputSchema: FOUND as unknown as Tool['outputSchema'],
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      call: async (p, raw) => {
        const args = argumentsOf(SIMILAR_OBJECTS, raw, ['text', 'object_id', 'limit']);
        const text = optionalString(args, 'text', MAX_SIMILAR_TEXT);
        const objectId = optionalString(args, 'object_id', MAX_ID);
        if ((text === undefined) === (objectId === undefined))
          throw new ToolInputError('give exactly one of text (what to find objects like) and object_id');
        const found = await reads.similarity.search(
          p,
          {
            filters: {},
            vector: text !== undefined ? { text } : { objectId },
            embeddingType: 'text',
            limit: integerIn(args, 'limit', 1, MAX_RESULTS, DEFAULT_RESULTS),
            offset: 0,
          },
          false,
        );
        return foundAnswer(found.results);
      },
    },
    {
      permission: 'content:read',
      definition: {
        name: READ_OBJECT,
        title: "Read a content object's text",
        description: `The text extracted from a content object (its name and type first), ${DEFAULT_READ_CHARS} characters at a time by default; call again with offset for the rest.`,
        inputSchema: {
          type: 'object',
          properties: {
            id: { ...ID, description: 'The object id (as search_objects answers it)' },
            offset: { type: 'integer', minimum: 0, description: 'The first character to read', default: 0 },
            max_chars: { type: 'integer', minimum: 1, maximum: MAX_READ_CHARS, default: DEFAULT_READ_CHARS },
          },
          required: ['id'],
          additionalProperties: false,
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      call: async (p, raw) => {
        const args = argumentsOf(READ_OBJECT, raw, ['id', 'offset', 'max_chars']);
        const id = requiredString(args, 'id', MAX_ID);
        const offset = integerIn(args, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
        const max = integerIn(args, 'max_chars', 1, MAX_READ_CHARS, DEFAULT_READ_CHARS);
        return readObject(reads, p, id, offset, max);
      },
    },
  ];
}

function summary(r: Partial<ObjectRecord>) {
  return {
    id: r.id!,
    name: r.name ?? '',
    uri: objectUri(r.id!),
    type: r.type?.name ?? null,
    ...(r.status ? { status: r.status } : {}),
    ...(r.location ? { location: r.location } : {}),
    ...(typeof r.score === 'number' && Number.isFinite(r.score) ? { score: r.score } : {}),
    ...(r.updated_at ? { updated_at: r.updated_at } : {}),
  };
}

function foundAnswer(records: Partial<ObjectRecord>[]): ToolAnswer {
  const results = records.filter((r) => r.id).map(summary);
  return {
    content: [
      {
        type: 'text',
        text: results.length ? JSON.stringify({ results }, null, 1) : 'No object matches.',
      },
      ...results.map((r) => ({ type: 'resource_link' as const, uri: r.uri, name: r.name || r.id })),
    ],
    structuredContent: { results },
  };
}

async function readObject(reads: ContentReads, p: Principal, id: string, offset: number, max: number) {
  const { record } = await reads.objects.get(p, id);
  const { text } = await reads.objects.text(p, id);
  const head = `${record.name ?? id} (object ${id}${record.type?.name ? `, type ${record.type.name}` : ''}, status ${record.status ?? 'unknown'})`;
  if (text === undefined || text === '') {
    const why =
      record.status === 'created' || record.status === 'processing'
        ? 'its content is still being processed; try again shortly'
        : 'it has no extracted text';
    return { content: [{ type: 'text' as const, text: `${head}: ${why}.` }] };
  }
  if (offset >= text.length && offset > 0)
    throw new ToolInputError(`offset ${offset} is past the end of the text (${text.length} characters)`);
  const slice = text.slice(offset, offset + max);
  const end = offset + slice.length;
  const more = end < text.length ? `; call again with offset ${end} for the rest` : '';
  return {
    content: [
      { type: 'text' as const, text: `${head}: characters ${offset} to ${end} of ${text.length}${more}.` },
      { type: 'text' as const, text: slice },
    ],
  };
}
