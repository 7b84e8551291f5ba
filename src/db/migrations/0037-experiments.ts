/**
 * 0037: experiments and online evaluation rules (src/experiments).
 *
 * An experiment runs every item of a dataset version through every variant (an interaction
 * version, a config) `repetitions` times and scores each run with its evaluators. `experiments`
 * holds its definition and state; `experiment_items` a copy of the items it ran (the dataset
 * version is frozen, the copy keeps an experiment readable after its dataset is deleted);
 * `experiment_cells` one row per item, variant and repetition: the run made, its scores or the
 * errors, and its figures (latency, tokens, cost) that the aggregates read. Cells and items go
 * with their experiment (foreign key, on delete cascade).
 *
 * `evaluation_rules`: online evaluation, a sampled share of new production runs of an interaction
 * (or matching a run query) scored in the background; `cursor_at`/`cursor_id` the last run read,
 * `window_minute`/`window_count` what was scored in the current minute.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');
const real = (d: DialectName) => (d === 'postgres' ? 'double precision' : 'real');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('experiments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text')
    .addColumn('dataset_id', 'text', (c) => c.notNull())
    .addColumn('dataset_version', 'integer', (c) => c.notNull())
    // [{name, interaction, interaction_id, config?}] and [{id, name, version}], fixed at creation.
    .addColumn('variants', json(d), (c) => c.notNull())
    .addColumn('evaluators', json(d), (c) => c.notNull())
    .addColumn('concurrency', 'integer', (c) => c.notNull())
    .addColumn('repetitions', 'integer', (c) => c.notNull())
    // queued | running | completed | failed | canceled
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('total', 'integer', (c) => c.notNull())
    // Who started it: its job runs and scores as them.
    .addColumn('principal', json(d), (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text')
    .execute();
  await db.schema
    .createIndex('experiments_recent')
    .on('experiments')
    .columns(['project_id', 'created_at desc', 'id desc'])
    .execute();

  await db.schema
    .createTable('experiment_items')
    .addColumn('experiment_id', 'text', (c) => c.notNull().references('experiments.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('data', json(d), (c) => c.notNull())
    .addColumn('expected', json(d))
    .addPrimaryKeyConstraint('experiment_items_pk', ['experiment_id', 'item_id'])
    .execute();
  await db.schema
    .createIndex('experiment_items_order')
    .on('experiment_items')
    .columns(['experiment_id', 'position'])
    .execute();

  await db.schema
    .createTable('experiment_cells')
    .addColumn('experiment_id', 'text', (c) => c.notNull().references('experiments.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('repetition', 'integer', (c) => c.notNull())
    // queued | running | completed | failed | canceled
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text')
    // {<evaluator name>: {value, score} | {error}}
    .addColumn('scores', json(d))
    .addColumn('error', 'text')
    .addColumn('latency_ms', real(d))
    .addColumn('prompt_tokens', 'integer')
    .addColumn('result_tokens', 'integer')
    .addColumn('cost', real(d))
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('experiment_cells_pk', ['experiment_id', 'item_id', 'variant', 'repetition'])
    .execute();
  await db.schema
    .createIndex('experiment_cells_status')
    .on('experiment_cells')
    .columns(['experiment_id', 'status', 'position'])
    .execute();

  await db.schema
    .createTable('evaluation_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('interaction', 'text')
    .addColumn('query', 'text')
    .addColumn('evaluators', json(d), (c) => c.notNull())
    .addColumn('sample_rate', real(d), (c) => c.notNull())
    .addColumn('max_per_minute', 'integer', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('principal', json(d), (c) => c.notNull())
    .addColumn('cursor_at', 'text', (c) => c.notNull())
    .addColumn('cursor_id', 'text', (c) => c.notNull())
    .addColumn('scored', 'integer', (c) => c.notNull())
    // The per-minute bound: the minute counted (ISO, to the minute) and the runs scored in it.
    .addColumn('window_minute', 'text', (c) => c.notNull())
    .addColumn('window_count', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('evaluation_rules_name')
    .on('evaluation_rules')
    .columns(['project_id', 'name'])
    .unique()
    .execute();
}
