/**
 * Giving the event loop its turns back during long work. On SQLite every query is synchronous
 * (better-sqlite3), so a chain of `await`s on the database never leaves the microtask queue: a
 * loop over a thousand rows, or a thousand jobs that each start when the previous one ends, holds
 * the loop for all of them unless it yields a macrotask turn now and then.
 */

/** Resolves on the next turn of the event loop, after the I/O and timers that wait. */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A time slice: `yield()` gives the loop a turn once `sliceMs` have passed since the last one
 * and is free otherwise, so a loop can call it at every step whatever each step costs.
 */
export class TimeSlice {
  private since = performance.now();

  constructor(private readonly sliceMs = 10) {}

  async yield(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return;
    await nextTurn();
    this.since = performance.now();
  }
}
