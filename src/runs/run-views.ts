/** How a run is read back: scoped to the caller's project, its interaction and environment expanded. */
import type { OrreryDialect } from '../db/dialect.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import { NotFound } from '../util/errors.ts';
import type { EnvironmentService } from '../interactions/environments.ts';
import type { InteractionService } from '../interactions/interactions.ts';
import type { RunEmbeddingHook, RunVectors } from '../embeddings/run-embeddings.ts';
import { docOf, toRun, type Run, type RunRow } from './model.ts';
import * as store from './store.ts';

export interface RunViewsDeps {
  db: store.Db;
  dialect: OrreryDialect;
  interactions: InteractionService;
  environments: EnvironmentService;
  /** input_embedding / result_embedding of new runs (src/embeddings); absent: none. */
  embeddings?: RunEmbeddingHook;
}

export class RunViews {
  constructor(private readonly deps: RunViewsDeps) {}

  /** The caller's run `id`, or a 404. */
  async row(p: Principal, id: string): Promise<RunRow> {
    const row = await store.getRun(this.deps.db, this.deps.dialect, scopeOf(p), id);
    if (!row) throw new NotFound('run', id);
    return row;
  }

  /** The run with its interaction and environment as objects (as they are now, else as the run recorded them). */
  async expand(p: Principal, row: RunRow): Promise<Run> {
    const run = toRun(row);
    const doc = docOf(row);
    const interaction = await this.deps.interactions.get(p, doc.interaction.id).catch(() => doc.interaction);
    const environment = doc.environment
      ? await this.deps.environments.get(p, doc.environment.id).catch(() => doc.environment)
      : null;
    return { ...run, interaction, environment };
  }

  /** The run as answered at its creation (and on the stream's close): with its prompt's and result's vectors. */
  async withEmbeddings(row: RunRow, run: Run): Promise<Run> {
    if (!this.deps.embeddings || row.status !== 'completed') return run;
    const doc = docOf(row);
    const vectors = await this.deps.embeddings.embedRun(
      { account: row.account_id, project: row.project_id },
      { id: row.id, prompt: doc.prompt, result: doc.result },
    );
    // Added keys first, the run spread after them (runs/search-index.ts, withColumns).
    if (!vectors) return run;
    const withVectors: Run & RunVectors = {
      input_embedding: vectors.input_embedding,
      result_embedding: vectors.result_embedding,
      ...run,
    };
    return withVectors;
  }
}
