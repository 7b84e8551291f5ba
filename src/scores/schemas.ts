/** Request and answer shapes of scores on runs (src/scores), with their bounds (service.ts, SCORE_BOUNDS). */
import { Type } from '@sinclair/typebox';

const closed = { additionalProperties: false };

const ScoreValue = Type.Union([Type.Number(), Type.Boolean(), Type.String({ minLength: 1, maxLength: 200 })], {
  description: 'A number, a boolean or a category string; a name keeps the kind of its first score in the project',
});

export const NewScoreBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Letters, digits, _ and -: run search reaches it as scores.<name>',
    }),
    value: ScoreValue,
    comment: Type.Optional(Type.String({ maxLength: 4000 })),
    source: Type.Optional(
      Type.Union([Type.Literal('api'), Type.Literal('human'), Type.Literal('evaluator')], {
        description: 'Who gave it (default api); evaluator needs evaluator',
      }),
    ),
    evaluator: Type.Optional(Type.String({ minLength: 1, description: "The evaluator's id, with source evaluator" })),
  },
  closed,
);

export const Score = Type.Object({
  id: Type.String(),
  run: Type.String(),
  name: Type.String(),
  value: Type.Union([Type.Number(), Type.Boolean(), Type.String()]),
  source: Type.String(),
  evaluator: Type.Optional(Type.String()),
  comment: Type.Optional(Type.String()),
  created_by: Type.String(),
  created_at: Type.String(),
});

export const ScoreParams = Type.Object({ id: Type.String({ minLength: 1 }), scoreId: Type.String({ minLength: 1 }) });

export const ScoreAnalyticsQuery = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'The score (a number or boolean score)' }),
    group_by: Type.Union([Type.Literal('interaction_version'), Type.Literal('model'), Type.Literal('day')], {
      description: 'interaction_version: per interaction and version; model; day (UTC, of the run)',
    }),
    from: Type.Optional(Type.String({ description: 'ISO date: runs created at or after' })),
    to: Type.Optional(Type.String({ description: 'ISO date: runs created before' })),
    interaction: Type.Optional(Type.String({ description: 'Only runs of this interaction (id)' })),
  },
  closed,
);

export const ScoreAnalyticsAnswer = Type.Object({
  name: Type.String(),
  kind: Type.Union([Type.String(), Type.Null()], { description: 'number or boolean (booleans count true as 1)' }),
  groups: Type.Array(
    Type.Object({
      key: Type.String({ description: 'model id, day (YYYY-MM-DD), or interaction id and version as <id>@<version>' }),
      interaction: Type.Optional(Type.String()),
      version: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
      mean: Type.Number(),
      min: Type.Number(),
      max: Type.Number(),
      count: Type.Integer(),
    }),
  ),
});
