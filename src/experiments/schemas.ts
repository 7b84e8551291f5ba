/** Request and answer shapes of experiments (src/experiments); bounds in service.ts (EXPERIMENT_BOUNDS, docs/reference/limits.md). */
import { Type } from '@sinclair/typebox';
import { PageQuery } from '../http/schemas.ts';

const closed = { additionalProperties: false };
const Nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);

const VariantBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'Unique in the experiment' }),
    interaction: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: 'An interaction version: its id or a selector (Name@1, Name@tag, Name@draft)',
    }),
    config: Type.Optional(
      Type.Object(
        {
          environment: Type.Optional(Type.String({ description: 'An environment id' })),
          model: Type.Optional(Type.String()),
          model_options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        },
        { ...closed, description: "The run's config: what the variant changes of the interaction" },
      ),
    ),
  },
  closed,
);

export const CreateExperimentBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    dataset: Type.String({ minLength: 1, description: "The dataset's id; the version used is frozen" }),
    dataset_version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
    variants: Type.Array(VariantBody, { minItems: 1, maxItems: 10 }),
    evaluators: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        maxItems: 10,
        description: 'Evaluator ids; each is pinned at its current version',
      }),
    ),
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 16, description: 'Runs at once (default 4)' })),
    repetitions: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, description: 'Runs of each item per variant (default 1)' }),
    ),
  },
  closed,
);

const ScoreFigures = Type.Object({
  mean: Nullable(Type.Number()),
  min: Nullable(Type.Number()),
  max: Nullable(Type.Number()),
  count: Type.Integer({ description: 'Scores given' }),
  errors: Type.Integer({ description: 'Runs the evaluator gave no score to (it threw)' }),
  pass_rate: Nullable(Type.Number({ description: 'Share of scores that pass: true, or a number of 0.5 or more' })),
  distribution: Type.Record(Type.String(), Type.Integer(), {
    description: 'Scores per value (up to 20 values), else per range of numbers',
  }),
});

const Variant = Type.Object({
  name: Type.String(),
  interaction: Type.String(),
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  runs: Type.Optional(Type.Object({ completed: Type.Integer(), failed: Type.Integer() })),
  scores: Type.Optional(Type.Record(Type.String(), ScoreFigures, { description: 'Per evaluator name' })),
  latency: Type.Optional(
    Type.Object(
      { p50: Nullable(Type.Number()), p95: Nullable(Type.Number()) },
      { description: 'Milliseconds, of the runs that completed' },
    ),
  ),
  tokens: Type.Optional(Type.Integer()),
  token_use: Type.Optional(Type.Object({ prompt: Type.Integer(), result: Type.Integer(), total: Type.Integer() })),
  cost: Type.Optional(Type.Number({ description: 'USD, of its runs whose price is known' })),
});

export const Experiment = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String()),
  dataset: Type.Object({ id: Type.String(), version: Type.Integer() }),
  status: Type.Union([
    Type.Literal('queued'),
    Type.Literal('running'),
    Type.Literal('completed'),
    Type.Literal('failed'),
    Type.Literal('canceled'),
  ]),
  error: Type.Optional(Type.String()),
  progress: Type.Object({
    done: Type.Integer(),
    total: Type.Integer(),
    completed: Type.Integer(),
    failed: Type.Integer(),
    canceled: Type.Integer(),
  }),
  variants: Type.Array(Variant),
  evaluators: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), version: Type.Integer() })),
  concurrency: Type.Integer(),
  repetitions: Type.Integer(),
  created_by: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  ended_at: Type.Optional(Type.String()),
});

const CellScore = Type.Union([
  Type.Object({ value: Type.Union([Type.Number(), Type.Boolean(), Type.String()]), score: Type.String() }),
  Type.Object({ error: Type.String() }),
]);
const Cell = Type.Object({
  run: Type.Optional(Type.String()),
  status: Type.String(),
  scores: Type.Record(Type.String(), CellScore),
  error: Type.Optional(Type.String({ description: "The run's error" })),
});

export const ExperimentItem = Type.Object({
  item: Type.String({ description: "The dataset item's id" }),
  data: Type.Record(Type.String(), Type.Unknown()),
  expected: Type.Optional(Type.Unknown()),
  runs: Type.Record(
    Type.String(),
    Type.Composite([Cell, Type.Object({ repetitions: Type.Optional(Type.Array(Cell)) })]),
    { description: 'Per variant name: its (first) run and scores; every repetition when there are several' },
  ),
});

export const ListExperimentsQuery = Type.Object(
  { ...PageQuery, dataset: Type.Optional(Type.String({ minLength: 1, description: "Only this dataset's" })) },
  closed,
);
export const ItemsQuery = Type.Object(PageQuery, closed);
export const CompareQuery = Type.Object(
  { with: Type.String({ minLength: 1, description: 'The other experiment' }) },
  closed,
);

export const Comparison = Type.Object({
  experiments: Type.Array(Experiment, { minItems: 2, maxItems: 2 }),
  same_dataset: Type.Boolean(),
  deltas: Type.Record(
    Type.String(),
    Type.Object({
      scores: Type.Record(
        Type.String(),
        Type.Object({ mean: Nullable(Type.Number()), pass_rate: Nullable(Type.Number()) }),
      ),
      latency_p50: Nullable(Type.Number()),
      cost: Nullable(Type.Number()),
      tokens: Nullable(Type.Number()),
    }),
    { description: "Per variant name both have: the other's figure minus this one's" },
  ),
});

// ---- online evaluation rules (rules.ts) ----

const RuleFields = {
  interaction: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 1000 }), Type.Null()], {
      description: 'An interaction (id or name): the new runs of any of its versions',
    }),
  ),
  query: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 4000 }), Type.Null()], {
      description: 'A Lucene run query the new runs must match (with interaction: both)',
    }),
  ),
  evaluators: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 10 })),
  sample_rate: Type.Optional(
    Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Share of new runs scored (default 1)' }),
  ),
  max_per_minute: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 600, description: 'Runs scored per minute at most (default 60)' }),
  ),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true' })),
};

export const CreateRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique in the project' }),
    ...RuleFields,
    evaluators: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 10, description: 'Evaluator ids' }),
  },
  closed,
);
export const UpdateRuleBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...RuleFields },
  closed,
);
export const Rule = Type.Object({
  id: Type.String(),
  name: Type.String(),
  interaction: Type.Optional(Type.String()),
  query: Type.Optional(Type.String()),
  evaluators: Type.Array(Type.String()),
  sample_rate: Type.Number(),
  max_per_minute: Type.Integer(),
  enabled: Type.Boolean(),
  scored: Type.Integer({ description: 'Runs scored so far' }),
  last_error: Type.Optional(Type.String({ description: 'The last evaluator error or pause, if any' })),
  cursor: Type.String({ description: 'Runs completed from this time on are looked at' }),
  created_by: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export const ListRulesQuery = Type.Object(PageQuery, closed);
