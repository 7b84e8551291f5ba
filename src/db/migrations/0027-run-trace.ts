/**
 * 0027: the OpenTelemetry trace of a run (src/telemetry): `trace_id` and `span_id` of its span,
 * so `trace_id:<id>` finds the runs of a trace. The index holds traced runs only: a server without
 * OTEL_* settings writes no entry of it. Frozen (style K7).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema.alterTable('runs').addColumn('trace_id', 'text').execute();
  await db.schema.alterTable('runs').addColumn('span_id', 'text').execute();
  await sql`CREATE INDEX runs_trace ON runs (project_id, trace_id) WHERE trace_id IS NOT NULL`.execute(db);
}
