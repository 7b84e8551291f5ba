/**
 * Migrations are frozen in time (style K7): each file takes `Kysely<any>` and the dialect name,
 * never today's types or helpers. Add a file for every change and list it here, in order; never
 * edit a shipped one.
 */
import type { Kysely, Migration, MigrationProvider } from 'kysely';
import type { DialectName } from './dialect.ts';
import * as m0001 from './migrations/0001-initial.ts';
import * as m0002 from './migrations/0002-objects.ts';
import * as m0003 from './migrations/0003-runs-search.ts';
import * as m0004 from './migrations/0004-cluster.ts';
import * as m0005 from './migrations/0005-jobs.ts';
import * as m0006 from './migrations/0006-embeddings.ts';
import * as m0007 from './migrations/0007-object-embeddings.ts';
import * as m0008 from './migrations/0008-jst-function-bodies.ts';
import * as m0009 from './migrations/0009-run-cost.ts';
import * as m0010 from './migrations/0010-result-cache.ts';
import * as m0011 from './migrations/0011-forks.ts';
import * as m0012 from './migrations/0012-apikey-enabled.ts';
import * as m0013 from './migrations/0013-collections.ts';
import * as m0014 from './migrations/0014-object-revisions.ts';
import * as m0015 from './migrations/0015-file-metadata.ts';
import * as m0016 from './migrations/0016-run-analytics.ts';
import * as m0017 from './migrations/0017-roles.ts';
import * as m0018 from './migrations/0018-audit.ts';
import * as m0019 from './migrations/0019-retention.ts';
import * as m0020 from './migrations/0020-limits.ts';
import * as m0021 from './migrations/0021-vector-graphs.ts';
import * as m0022 from './migrations/0022-import-links.ts';
import * as m0023 from './migrations/0023-inflight-indexes.ts';
import * as m0024 from './migrations/0024-ascending-run-indexes.ts';
import * as m0025 from './migrations/0025-replica-pid.ts';
import * as m0026 from './migrations/0026-door-turns.ts';
import * as m0027 from './migrations/0027-run-trace.ts';
import * as m0028 from './migrations/0028-previous-run.ts';
import * as m0029 from './migrations/0029-datasets.ts';
import * as m0030 from './migrations/0030-async-runs.ts';
import * as m0031 from './migrations/0031-agents.ts';
import * as m0032 from './migrations/0032-evaluation.ts';
import * as m0033 from './migrations/0033-users.ts';
import * as m0035 from './migrations/0035-events.ts';
import * as m0037 from './migrations/0037-experiments.ts';
import * as m0040 from './migrations/0040-jobs-by-project.ts';
import * as m0041 from './migrations/0041-interaction-run-options.ts';

type Step = { up: (db: Kysely<any>, dialect: DialectName) => Promise<void> };

const steps: Record<string, Step> = {
  '0001_initial': m0001,
  '0002_objects': m0002,
  '0003_runs_search': m0003,
  '0004_cluster': m0004,
  '0005_jobs': m0005,
  '0006_embeddings': m0006,
  '0007_object_embeddings': m0007,
  '0008_jst_function_bodies': m0008,
  '0009_run_cost': m0009,
  '0010_result_cache': m0010,
  '0011_forks': m0011,
  '0012_apikey_enabled': m0012,
  '0013_collections': m0013,
  '0014_object_revisions': m0014,
  '0015_file_metadata': m0015,
  '0016_run_analytics': m0016,
  '0017_roles': m0017,
  '0018_audit': m0018,
  '0019_retention': m0019,
  '0020_limits': m0020,
  '0021_vector_graphs': m0021,
  '0022_import_links': m0022,
  '0023_inflight_indexes': m0023,
  '0024_ascending_run_indexes': m0024,
  '0025_replica_pid': m0025,
  '0026_door_turns': m0026,
  '0027_run_trace': m0027,
  '0028_previous_run': m0028,
  '0029_datasets': m0029,
  '0030_async_runs': m0030,
  '0031_agents': m0031,
  '0032_evaluation': m0032,
  '0033_users': m0033,
  '0035_events': m0035,
  '0037_experiments': m0037,
  '0040_jobs_by_project': m0040,
  '0041_interaction_run_options': m0041,
};

export class OrreryMigrations implements MigrationProvider {
  constructor(private readonly dialect: DialectName) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return Object.fromEntries(
      Object.entries(steps).map(([name, step]) => [name, { up: (db: Kysely<any>) => step.up(db, this.dialect) }]),
    );
  }
}
