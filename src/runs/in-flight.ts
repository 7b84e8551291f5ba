/**
 * The runs this process has in flight: from the start of a request that creates one until its
 * outcome is stored (a streamed run: from its creation, then from its claim until its end; a
 * virtual run's children each count). The run service keeps it; the SQLite run writer asks it
 * whether a run is alone, so that its rows cannot share a commit with another's
 * (runs/run-writer-thread.ts).
 */
export class RunsInFlight {
  private n = 0;
  /** Runs started in this turn of the event loop (ended by the turn's check phase), and in the last turn that started any. */
  private startedThisTurn = 0;
  private startedLastTurn = 0;
  private readonly endTurn = () => {
    this.startedLastTurn = this.startedThisTurn;
    this.startedThisTurn = 0;
  };

  get count(): number {
    return this.n;
  }

  /**
   * No other run is in flight, and none other started in this turn of the event loop or in the
   * last one that started runs. A run that never waits (the `test` provider, a cache hit) ends
   * within the turn that read its request, so under load the runs of many connections follow each
   * other in one turn, each alone by count; the first of such a turn is not alone either.
   */
  alone(): boolean {
    return this.n <= 1 && this.startedThisTurn <= 1 && this.startedLastTurn <= 1;
  }

  /** Counts one more run while `work` runs. */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.n++;
    if (this.startedThisTurn++ === 0) setImmediate(this.endTurn);
    try {
      return await work();
    } finally {
      this.n--;
    }
  }
}
