/** Datasets (src/datasets): parse, call the service, answer (style F2). */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams, PageQuery } from '../http/schemas.ts';
import { BadRequest } from '../util/errors.ts';
import type { DatasetService } from './service.ts';
import {
  AddItemsAnswer,
  AddItemsBody,
  CreateDatasetBody,
  Dataset,
  ExportQuery,
  Item,
  ItemParams,
  ItemsQuery,
  UpdateDatasetBody,
} from './schemas.ts';

export const datasetRoutes: FastifyPluginAsyncTypebox<{ datasets: DatasetService }> = async (app, { datasets }) => {
  const tags = ['datasets'];
  const dataset = Dataset;

  app.post(
    '/datasets',
    {
      schema: {
        tags,
        summary: 'Create a dataset (version 1, no items)',
        body: CreateDatasetBody,
        response: { 200: dataset, ...errorResponses(400, 401, 409) },
      },
    },
    (req) => datasets.create(principalOf(req), req.body),
  );
  app.get(
    '/datasets',
    {
      schema: {
        tags,
        summary: 'List datasets, newest change first',
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Array(dataset), ...errorResponses(400, 401) },
      },
    },
    (req) => datasets.list(principalOf(req), req.query),
  );
  app.get(
    '/datasets/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve a dataset',
        params: IdParams,
        response: { 200: dataset, ...errorResponses(401, 404) },
      },
    },
    (req) => datasets.retrieve(principalOf(req), req.params.id),
  );
  app.put(
    '/datasets/:id',
    {
      schema: {
        tags,
        summary: "Rename a dataset or change its description (its items' versions do not change)",
        params: IdParams,
        body: UpdateDatasetBody,
        response: { 200: dataset, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => datasets.update(principalOf(req), req.params.id, req.body),
  );
  app.delete(
    '/datasets/:id',
    {
      schema: {
        tags,
        summary: 'Delete a dataset and every version of its items',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404) },
      },
    },
    (req) => datasets.remove(principalOf(req), req.params.id),
  );
  app.post(
    '/datasets/:id/versions',
    {
      schema: {
        tags,
        summary: 'Freeze the current version: it reads the same from now on, and later changes make the next one',
        params: IdParams,
        response: { 200: dataset, ...errorResponses(401, 404) },
      },
    },
    (req) => datasets.freeze(principalOf(req), req.params.id),
  );
  app.post(
    '/datasets/:id/items',
    {
      schema: {
        tags,
        summary: 'Add items to the current version: {items} as given, or {from_runs} copied from completed runs',
        params: IdParams,
        body: AddItemsBody,
        response: { 200: AddItemsAnswer, ...errorResponses(400, 401, 404, 413) },
      },
    },
    (req) => {
      const { items, from_runs } = req.body;
      if ((items === undefined) === (from_runs === undefined))
        throw new BadRequest('pass either items or from_runs (one of them)');
      const p = principalOf(req);
      return items ? datasets.addItems(p, req.params.id, items) : datasets.addFromRuns(p, req.params.id, from_runs!);
    },
  );
  app.get(
    '/datasets/:id/items',
    {
      schema: {
        tags,
        summary: 'The items of a version (default: the current one), in the order they were added',
        params: IdParams,
        querystring: ItemsQuery,
        response: {
          200: Type.Object({ version: Type.Integer(), items: Type.Array(Item) }),
          ...errorResponses(400, 401, 404),
        },
      },
    },
    (req) => datasets.items(principalOf(req), req.params.id, req.query),
  );
  app.delete(
    '/datasets/:id/items/:itemId',
    {
      schema: {
        tags,
        summary: 'Take an item out of the current version (frozen versions keep it)',
        params: ItemParams,
        response: { 200: Type.Object({ id: Type.String(), version: Type.Integer() }), ...errorResponses(401, 404) },
      },
    },
    (req) => datasets.removeItem(principalOf(req), req.params.id, req.params.itemId),
  );
  app.get(
    '/datasets/:id/export',
    {
      schema: {
        tags,
        summary:
          "Export the items of a version as JSON Lines ({data, expected?, metadata?, source_run?} per line), or with format=openai_chat in OpenAI's fine-tuning chat format",
        params: IdParams,
        querystring: ExportQuery,
        produces: ['application/x-ndjson'],
        response: {
          200: Type.String({ description: 'application/x-ndjson, streamed' }),
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const version = await datasets.check(p, req.params.id, req.query.version);
      if (req.query.format === 'openai_chat') {
        const skipped = { count: 0 };
        async function* examples() {
          for await (const ex of datasets.chatExamples(p, req.params.id, version, skipped))
            yield JSON.stringify(ex) + '\n';
        }
        // How many items could not be written in the format: known once the last one was read.
        reply.trailer('x-skipped-items', async () => String(skipped.count));
        return reply
          .type('application/x-ndjson')
          .header('content-disposition', `attachment; filename="dataset-${req.params.id}-v${version}-chat.jsonl"`)
          .send(Readable.from(examples()) as never);
      }
      async function* lines() {
        for await (const it of datasets.allItems(p, req.params.id, version)) {
          const { data, expected, metadata, source_run } = it;
          yield JSON.stringify({ data, expected, metadata, source_run }) + '\n';
        }
      }
      return reply
        .type('application/x-ndjson')
        .header('content-disposition', `attachment; filename="dataset-${req.params.id}-v${version}.jsonl"`)
        .send(Readable.from(lines()) as never);
    },
  );
};
