/** Request and answer shapes of datasets (src/datasets), with their bounds (service.ts, DATASET_BOUNDS; docs/reference/limits.md). */
import { Type } from '@sinclair/typebox';
import { Offset, OpenObject } from '../http/schemas.ts';

const closed = { additionalProperties: false };

export const CreateDatasetBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique within the project' }),
    description: Type.Optional(Type.String({ maxLength: 4000 })),
  },
  closed,
);

export const UpdateDatasetBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
  },
  closed,
);

export const Dataset = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    version: Type.Integer({ description: 'The version changes go to' }),
    frozen_version: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The newest frozen version (null: none); changes after it make version + 1',
    }),
    item_count: Type.Integer({ description: 'Items of the current version' }),
    created_by: Type.String(),
    updated_by: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { description: 'A dataset and the version its changes go to' },
);

const NewItem = Type.Object(
  {
    data: Type.Record(Type.String(), Type.Unknown(), { description: "The item's input: an interaction's data" }),
    expected: Type.Optional(Type.Unknown({ description: 'The expected output, when there is one' })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  closed,
);

export const AddItemsBody = Type.Object(
  {
    items: Type.Optional(
      Type.Array(NewItem, { description: 'At most 1,000 items per request, each at most 256 KB of JSON' }),
    ),
    from_runs: Type.Optional(
      Type.Object(
        {
          query: Type.Optional(Type.String({ maxLength: 10_000, description: 'A Lucene run query' })),
          filters: Type.Optional(
            OpenObject({}, { description: 'Run search filters (interaction, status, tags, …), as POST /runs/search' }),
          ),
          limit: Type.Integer({ minimum: 1, maximum: 500, description: 'Runs to copy, newest first' }),
        },
        {
          ...closed,
          description: "Copy completed runs: the run's data, its answer as expected, the run as source_run",
        },
      ),
    ),
  },
  closed,
);

export const AddItemsAnswer = Type.Object({
  ids: Type.Array(Type.String()),
  version: Type.Integer({ description: 'The version the items were added to' }),
  skipped: Type.Optional(
    Type.Array(Type.Object({ run: Type.String(), reason: Type.String() }), {
      description: 'Runs found but not copied, and why',
    }),
  ),
});

export const Item = Type.Object({
  id: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  expected: Type.Optional(Type.Unknown()),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  source_run: Type.Optional(Type.String()),
  version_added: Type.Integer(),
  created_at: Type.String(),
});

export const ItemsQuery = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Page size, default 100, at most 1,000 (larger values are clamped)' }),
    ),
    offset: Type.Optional(Offset()),
  },
  closed,
);

export const ExportQuery = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
    format: Type.Optional(
      Type.Union([Type.Literal('jsonl'), Type.Literal('openai_chat')], {
        description:
          "jsonl: an item per line (the default); openai_chat: OpenAI's fine-tuning chat format, {messages} per item copied from a run (its prompt, then expected as the answer)",
      }),
    ),
  },
  closed,
);

export const ItemParams = Type.Object({ id: Type.String({ minLength: 1 }), itemId: Type.String({ minLength: 1 }) });
