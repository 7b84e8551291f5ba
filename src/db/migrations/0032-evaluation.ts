/**
 * 0032: the evaluation loop's scores and evaluators.
 *
 * Scores on runs (src/scores). A score is a named value (a number, a boolean or a category)
 * given to a run by a caller, a person or an evaluator. `run_scores` keeps every score given; the
 * newest per run and name has `latest = 1`, the one a run answers and run search matches, so a
 * search or a facet walks only the latest ones (run_scores_numbers / run_scores_texts) and a run's
 * own scores are one index range (run_scores_run). `score_names` fixes a name's kind within a
 * project (the first score given decides). Scores go with their run (foreign key, on delete cascade).
 *
 * Evaluators (src/evaluators): `evaluators` holds each one's current version; every version's
 * type and config stay in `evaluator_versions`, so a score names the version that gave it.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('score_names')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    // number | boolean | category
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('score_names_pk', ['project_id', 'name'])
    .execute();
  await db.schema
    .createTable('run_scores')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    // A number in num_value; a boolean ('true' / 'false') or a category in text_value.
    .addColumn('num_value', d === 'postgres' ? 'double precision' : 'real')
    .addColumn('text_value', 'text')
    .addColumn('comment', 'text')
    // api | human | evaluator (with evaluator_id)
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('evaluator_id', 'text')
    .addColumn('latest', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('run_scores_run').on('run_scores').columns(['run_id', 'name', 'created_at']).execute();
  await db.schema
    .createIndex('run_scores_numbers')
    .on('run_scores')
    .columns(['project_id', 'name', 'latest', 'num_value', 'run_id'])
    .execute();
  await db.schema
    .createIndex('run_scores_texts')
    .on('run_scores')
    .columns(['project_id', 'name', 'latest', 'text_value', 'run_id'])
    .execute();

  await db.schema
    .createTable('evaluators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('evaluators_name').on('evaluators').columns(['project_id', 'name']).unique().execute();
  await db.schema
    .createTable('evaluator_versions')
    .addColumn('evaluator_id', 'text', (c) => c.notNull().references('evaluators.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('config', json(d), (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('evaluator_versions_pk', ['evaluator_id', 'version'])
    .execute();
}
