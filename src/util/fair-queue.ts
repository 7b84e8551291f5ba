/**
 * A queue shared by tenants (projects) and served in turn: each tenant's items keep their order,
 * and the next item taken is that of the next tenant in rotation that has one and is under its
 * cap of items in progress. One tenant's flood therefore waits behind itself, not in front of
 * everyone else.
 */
export class FairQueue<T> {
  private readonly waiting = new Map<string, T[]>();
  /** Tenants with waiting items, in the order they are served next. */
  private readonly turn: string[] = [];
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(tenant: string, item: T): void {
    let items = this.waiting.get(tenant);
    if (!items) {
      items = [];
      this.waiting.set(tenant, items);
      this.turn.push(tenant);
    }
    items.push(item);
    this.count++;
  }

  /**
   * The next item of the first tenant in turn that `mayStart` allows (a tenant under its cap),
   * which then goes to the back of the turn; undefined when none may start.
   */
  shift(mayStart: (tenant: string) => boolean = () => true): { tenant: string; item: T } | undefined {
    for (let i = 0; i < this.turn.length; i++) {
      const tenant = this.turn[i];
      if (!mayStart(tenant)) continue;
      const items = this.waiting.get(tenant)!;
      const item = items.shift()!;
      this.count--;
      this.turn.splice(i, 1);
      if (items.length) this.turn.push(tenant);
      else this.waiting.delete(tenant);
      return { tenant, item };
    }
    return undefined;
  }

  /** Every waiting item, emptying the queue. */
  drain(): T[] {
    const all = this.turn.flatMap((t) => this.waiting.get(t)!);
    this.waiting.clear();
    this.turn.length = 0;
    this.count = 0;
    return all;
  }
}
