/**
 * One operation at a time per blob key, in this process: an upload received through a signed URL
 * and an object adopting that upload serialize, so the adopted bytes are exactly the bytes whose
 * ETag the object records (the folder store keeps ETags in the table, not in the files).
 */
export class KeyLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => {});
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
