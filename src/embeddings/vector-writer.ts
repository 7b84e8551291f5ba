/**
 * Run vectors are written off the request path: queued, and written together once per event-loop
 * turn (one multi-row upsert per project), like the run writer's group commit. A failed batch is
 * reported and dropped: a run's vectors are an index, not the record of the run.
 */
import type { Scope } from '../auth/principal.ts';
import { upsertVectors, type Db, type VectorRow } from './store.ts';

interface Queued {
  scope: Scope;
  row: VectorRow;
}

const MAX_BATCH = 1000;

export class VectorWriter {
  private queue: Queued[] = [];
  private scheduled = false;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly written: (scope: Scope, rows: VectorRow[]) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  push(scope: Scope, rows: VectorRow[]): void {
    for (const row of rows) this.queue.push({ scope, row });
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.flushing = this.flushing.then(() => this.flush());
    });
  }

  async drain(): Promise<void> {
    while (this.queue.length || this.scheduled) await this.flushing.then(() => new Promise((r) => setImmediate(r)));
    await this.flushing;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const byProject = new Map<string, Queued[]>();
      for (const q of batch) {
        const key = `${q.scope.account}|${q.scope.project}`;
        let list = byProject.get(key);
        if (!list) byProject.set(key, (list = []));
        list.push(q);
      }
      for (const group of byProject.values()) {
        const scope = group[0].scope;
        const rows = group.map((q) => q.row);
        try {
          await upsertVectors(this.db, scope, rows);
          this.written(scope, rows);
        } catch (err) {
          this.onError(err);
        }
      }
    }
  }
}
