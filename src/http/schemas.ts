/** Schemas shared by every feature: the error shape, refs, paging. */
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import { MAX_OFFSET } from './query.ts';

export const ErrorSchema = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable code, e.g. not_found, bad_request' }),
    status: Type.Integer(),
    message: Type.String({ description: 'What went wrong and what to fix' }),
    details: Type.Optional(Type.Unknown()),
  },
  { $id: 'Error', additionalProperties: true, description: 'The one error shape of every failed request' },
);

export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, Type.Ref('Error')])) as Record<number, TSchema>;

export const RefSchema = Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: true });

export const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) });

/** Bounds of the short strings and lists a user stores (README, Limits). */
const MAX_NAME_LENGTH = 1000;
const MAX_TAG_LENGTH = 200;
const MAX_TAGS = 1000;
const MAX_DESCRIPTION_LENGTH = 100_000;

/** A name, id, path or other short string a user gives. */
export const ShortString = (options: Record<string, unknown> = {}) =>
  Type.String({ maxLength: MAX_NAME_LENGTH, ...options });
/** Tags: at most MAX_TAGS of at most MAX_TAG_LENGTH characters each. */
export const TagList = (options: Record<string, unknown> = {}) =>
  Type.Array(Type.String({ maxLength: MAX_TAG_LENGTH }), { maxItems: MAX_TAGS, ...options });
export const Description = (options: Record<string, unknown> = {}) =>
  Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, ...options });

/** `offset` of every list, find and search: 0 to MAX_OFFSET (http/query.ts). */
export const Offset = (description = 'Items to skip, default 0, at most 100,000') =>
  Type.Integer({ minimum: 0, maximum: MAX_OFFSET, description });

/** limit/offset as the interface says: numbers in the query string. */
export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Page size, default 100, at most 1,000 (larger values are clamped)' }),
  ),
  offset: Type.Optional(Offset()),
};

/** A string that may arrive repeated (?a=1&a=2) or comma-joined (?a=1,2). */
export const ListParam = (description: string) =>
  Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }));

/** An open JSON object (extra fields allowed and kept). */
export const OpenObject = <T extends TProperties>(props: T, options: Record<string, unknown> = {}) =>
  Type.Object(props, { additionalProperties: true, ...options });
