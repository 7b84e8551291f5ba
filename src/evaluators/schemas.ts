/** Request and answer shapes of evaluators (src/evaluators); bounds in verdicts.ts (CONFIG_BOUNDS) and service.ts. */
import { Type } from '@sinclair/typebox';
import { PageQuery } from '../http/schemas.ts';
import { Score } from '../scores/schemas.ts';

const closed = { additionalProperties: false };
const TYPES =
  'judge ({interaction}), code ({body}), exact_match, contains ({value, case_sensitive?}), regex ({pattern, flags?}), json_schema_valid ({schema}), latency_under ({ms}), cost_under ({usd})';

export const CreateEvaluatorBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Unique in the project; the name of the scores it gives (letters, digits, _ and -)',
    }),
    type: Type.String({ description: TYPES }),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The type's parameters" })),
    description: Type.Optional(Type.String({ maxLength: 4000 })),
  },
  closed,
);

export const UpdateEvaluatorBody = Type.Object(
  {
    type: Type.Optional(Type.String({ description: TYPES })),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  closed,
);

export const Evaluator = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  type: Type.String(),
  config: Type.Record(Type.String(), Type.Unknown()),
  version: Type.Integer({ description: 'The version answered (the current one unless ?version= was given)' }),
  created_by: Type.String(),
  updated_by: Type.String({ description: 'Who made this version' }),
  created_at: Type.String(),
  updated_at: Type.String({ description: 'When this version was made' }),
});

export const ListEvaluatorsQuery = Type.Object(PageQuery, closed);
export const RetrieveEvaluatorQuery = Type.Object(
  { version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })) },
  closed,
);

export const EvaluateBody = Type.Object(
  {
    run: Type.String({ minLength: 1, description: 'The run to score' }),
    expected: Type.Optional(Type.Unknown({ description: 'The expected output (exact_match, code and judge read it)' })),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the current version' })),
  },
  closed,
);

export const EvaluationAnswer = Type.Object({
  evaluator: Type.String(),
  version: Type.Integer(),
  score: Type.Optional(Score),
  reason: Type.Optional(Type.String()),
  error: Type.Optional(
    Type.Object({ message: Type.String() }, { description: 'Why the evaluator gave no score (no score was recorded)' }),
  ),
});
