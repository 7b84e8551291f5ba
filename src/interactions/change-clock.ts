/**
 * A per-project counter bumped by every write to environments, prompts and interactions in this
 * process. The run service caches what it resolves for an execution (interaction with its
 * templates, environment with its decrypted key) and drops an entry as soon as the counter moves;
 * other replicas' writes are picked up when the short TTL expires.
 */
export class ChangeClock {
  private readonly versions = new Map<string, number>();

  bump(project: string): void {
    this.versions.set(project, (this.versions.get(project) ?? 0) + 1);
  }

  version(project: string): number {
    return this.versions.get(project) ?? 0;
  }
}
