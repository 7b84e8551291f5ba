/**
 * `/api/v1/import/*`: the links of `orrery import` and runs stored as records. Admin keys only
 * (`project:admin`): a link decides what a later import skips, and a run record is history.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { BadRequest, PayloadTooLarge } from '../util/errors.ts';
import { ImportedRunSchema } from './schemas.ts';
import { LINK_KINDS, type ImportedRun, type ImportService } from './service.ts';

/** Links per page of GET /import/links. */
const LINKS_PAGE = 10_000;

const Kind = Type.Union(LINK_KINDS.map((k) => Type.Literal(k)));
const Link = Type.Object({
  kind: Kind,
  source_id: Type.String({ minLength: 1, maxLength: 1000 }),
  target_id: Type.String({ minLength: 1, maxLength: 1000 }),
  source_version: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]),
});
/** Answers carry the stored kind as it is. */
const LinkOut = Type.Object({ ...Link.properties, kind: Type.String() });
const Source = Type.String({ minLength: 1, maxLength: 2000, description: 'The URL of the source server' });

export const importRoutes: FastifyPluginAsyncTypebox<{ imports: ImportService }> = async (app, { imports }) => {
  app.get(
    '/import/links',
    {
      schema: {
        tags: ['import'],
        summary:
          'What earlier imports from a source server copied into this project: source id → copy id, with the source version copied',
        description:
          'Pages of at most `limit` (default and maximum 10,000) in (kind, source_id) order; the next page starts `after_kind`/`after_id` = the last link of this one.',
        querystring: Type.Object({
          source: Source,
          kind: Type.Optional(Kind),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LINKS_PAGE, default: LINKS_PAGE })),
          after_kind: Type.Optional(Type.String({ maxLength: 100 })),
          after_id: Type.Optional(Type.String({ maxLength: 1000 })),
        }),
        response: { 200: Type.Array(LinkOut), ...errorResponses(400, 401, 403) },
      },
    },
    (req) => {
      const { source, kind, limit, after_kind: afterKind, after_id: afterId } = req.query;
      if ((afterKind === undefined) !== (afterId === undefined))
        throw new BadRequest('give after_kind and after_id together (the last link of the previous page)');
      return imports.list(principalOf(req), source, {
        kind,
        limit: limit ?? LINKS_PAGE,
        after: afterKind !== undefined ? { kind: afterKind, source_id: afterId! } : undefined,
      });
    },
  );

  app.put(
    '/import/links',
    {
      schema: {
        tags: ['import'],
        summary: 'Record (or move) the link of one copied thing',
        body: Type.Object({ source: Source, link: Link }),
        response: { 200: LinkOut, ...errorResponses(400, 401, 403) },
      },
    },
    (req) => imports.put(principalOf(req), req.body.source, req.body.link),
  );

  const maxBody = imports.maxBodyBytes;
  app.post(
    '/import/runs',
    {
      bodyLimit: maxBody,
      // Refused before the body is read: parsing a body this large would hold the event loop.
      onRequest: async (req) => {
        const length = Number(req.headers['content-length']);
        if (length > maxBody)
          throw new PayloadTooLarge(
            `an imported run is at most ${maxBody} bytes of JSON (four times ORRERY_MAX_INLINE_JSON, and 64 KiB), got ${length}: its parameters, result and prompt are each at most ORRERY_MAX_INLINE_JSON, and so is each other field`,
            { size: length, limit: maxBody },
          );
      },
      schema: {
        tags: ['import'],
        summary: 'Store a run of another server as a record (not executed), with its link; idempotent by source id',
        body: Type.Object({
          source: Source,
          source_id: Type.String({ minLength: 1, maxLength: 1000 }),
          source_version: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]),
          run: ImportedRunSchema,
        }),
        response: {
          200: Type.Object({ id: Type.String(), created: Type.Boolean() }),
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    (req) =>
      imports.importRun(
        principalOf(req),
        req.body.source,
        req.body.source_id,
        req.body.source_version,
        req.body.run as unknown as ImportedRun,
      ),
  );
};
