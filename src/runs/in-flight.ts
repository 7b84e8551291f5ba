/**
 * How many runs this process has in flight: from the start of a request that creates one until
 * its outcome is stored (a streamed run: from its creation, then from its claim until its end; a
 * virtual run's children each count). The run service keeps it; the SQLite run writer reads it to
 * know when a run is alone, and its rows cannot share a commit with another's
 * (runs/run-writer-thread.ts).
 */
export class RunsInFlight {
  private n = 0;

  get count(): number {
    return this.n;
  }

  /** Counts one more run while `work` runs. */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.n++;
    try {
      return await work();
    } finally {
      this.n--;
    }
  }
}
