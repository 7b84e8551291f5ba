/** 0001: accounts, projects, keys, settings, environments, prompts, interactions, runs. Frozen. */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('settings', json(d))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('projects_account_namespace', ['account_id', 'namespace'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_hint', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_keys_project').on('api_keys').columns(['account_id', 'project_id']).execute();

  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('environments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('endpoint_url', 'text')
    .addColumn('default_model', 'text')
    .addColumn('enabled_models', json(d))
    .addColumn('api_key_enc', 'text')
    .addColumn('apikey_hint', 'text')
    .addColumn('config', json(d))
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('environments_scope').on('environments').columns(['project_id', 'updated_at']).execute();

  await db.schema
    .createTable('prompts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('input_schema', json(d))
    .addColumn('tags', json(d))
    .addColumn('test_data', json(d))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('edit_revision', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('prompts_scope').on('prompts').columns(['project_id', 'updated_at']).execute();

  await db.schema
    .createTable('interactions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('edit_revision', 'integer', (c) => c.notNull())
    .addColumn('parent_id', 'text')
    .addColumn('prompts', json(d), (c) => c.notNull())
    .addColumn('environment_id', 'text')
    .addColumn('model', 'text')
    .addColumn('model_options', json(d))
    .addColumn('result_schema', json(d))
    .addColumn('interaction_schema', json(d))
    .addColumn('test_data', json(d))
    .addColumn('tags', json(d))
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('interactions_scope').on('interactions').columns(['project_id', 'updated_at']).execute();
  await db.schema
    .createIndex('interactions_endpoint')
    .on('interactions')
    .columns(['project_id', 'endpoint', 'version'])
    .execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('interaction_id', 'text', (c) => c.notNull())
    .addColumn('environment_id', 'text')
    .addColumn('model_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('parent_id', 'text')
    .addColumn('finish_reason', 'text')
    .addColumn('execution_time', 'integer')
    .addColumn('token_prompt', 'integer')
    .addColumn('token_result', 'integer')
    .addColumn('token_total', 'integer')
    .addColumn('tags', json(d))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('doc', json(d), (c) => c.notNull())
    .execute();
  // Newest-first listing, stable under paging (decisions.md: updated_at desc, id desc).
  await db.schema.createIndex('runs_recent').on('runs').columns(['project_id', 'updated_at desc', 'id desc']).execute();
  await db.schema.createIndex('runs_status').on('runs').columns(['project_id', 'status', 'updated_at desc']).execute();
  await db.schema
    .createIndex('runs_interaction')
    .on('runs')
    .columns(['project_id', 'interaction_id', 'updated_at desc'])
    .execute();
  // Partial indexes: most runs have no parent and are not waiting for a stream, so these stay
  // small and cost nothing on the write path of an ordinary run.
  await db.schema
    .createIndex('runs_parent')
    .on('runs')
    .columns(['project_id', 'parent_id', 'updated_at desc'])
    .where(sql<boolean>`parent_id IS NOT NULL`)
    .execute();
  // The sweeper of never-streamed runs looks for old `created` runs across projects.
  await db.schema
    .createIndex('runs_created_sweep')
    .on('runs')
    .columns(['created_at'])
    .where(sql<boolean>`status = 'created'`)
    .execute();

  await db.schema
    .createTable('run_tags')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_tags_pk', ['run_id', 'tag'])
    .execute();
  await db.schema.createIndex('run_tags_tag').on('run_tags').columns(['tag', 'run_id']).execute();
}
