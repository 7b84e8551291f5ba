/** The wire shapes of rate limits and quotas (src/limits). */
import { Type } from '@sinclair/typebox';

const Nullable = <T extends ReturnType<typeof Type.Object>>(t: T) => Type.Union([t, Type.Null()]);
export const LimitsSchema = Type.Object({
  requests_per_minute: Type.Optional(Type.Integer({ minimum: 1 })),
  tokens_per_minute: Type.Optional(Type.Integer({ minimum: 1 })),
  cost_per_day: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'USD per UTC day' })),
});
const UseSchema = Type.Object({
  requests_this_minute: Type.Integer(),
  tokens_this_minute: Type.Integer(),
  cost_today: Type.Number(),
});
const Scoped = Type.Object({ limits: Nullable(LimitsSchema), use: UseSchema });
export const LimitsReport = Type.Object({ project: Scoped, key: Scoped });
