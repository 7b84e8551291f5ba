/** A commit checked out beside this one, for A/B benchmarks of two commits. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './processes.ts';

export interface BaseCheckout {
  /** The commit's short hash. */
  sha: string;
  /** Its checkout (a temporary git worktree that uses this checkout's node_modules). */
  dir: string;
  remove(): void;
}

/** `ref` in a temporary worktree; a base whose dependencies differ needs its own `npm ci` first. */
export function checkoutBase(ref: string): BaseCheckout {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const sha = git('rev-parse', '--short', ref);
  const dir = join(mkdtempSync(join(tmpdir(), 'orrery-ab-')), 'base');
  git('worktree', 'add', '--detach', dir, sha);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return {
    sha,
    dir,
    remove: () => {
      git('worktree', 'remove', '--force', dir);
      rmSync(join(dir, '..'), { recursive: true, force: true });
    },
  };
}
