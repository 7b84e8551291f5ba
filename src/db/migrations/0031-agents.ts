/**
 * 0031: agents (src/agents). `agent_runs`: one row per agent started by POST /execute/async with
 * `type: "conversation"` (its run is the agent's run): what it was asked (`spec`), where it is
 * (`state`), its deadline and whether it was asked to stop. `agent_steps`: its steps in order, each
 * written before (`started`) and after (`done` / `failed`) it runs, with the idempotency key it runs
 * under, so a restarted server resumes after the last completed step. `mcp_servers`: the remote MCP
 * servers of a project, their headers encrypted at rest. Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('agent_runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('spec', json(d), (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('stop_requested', 'integer', (c) => c.notNull())
    .addColumn('deadline_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_runs_project').on('agent_runs').columns(['project_id']).execute();
  await db.schema
    .createTable('agent_steps')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('input', json(d), (c) => c.notNull())
    .addColumn('output', json(d))
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text')
    .addPrimaryKeyConstraint('agent_steps_pk', ['run_id', 'seq'])
    .execute();
  await db.schema.createIndex('agent_steps_project').on('agent_steps').columns(['project_id']).execute();
  await db.schema
    .createTable('mcp_servers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('headers_enc', 'text')
    .addColumn('header_names', json(d), (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('mcp_servers_project_name')
    .on('mcp_servers')
    .columns(['project_id', 'name'])
    .unique()
    .execute();
}
