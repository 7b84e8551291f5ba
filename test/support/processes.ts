/**
 * Orrery as real server processes (`node src/cli.ts serve`), for tests that need several replicas
 * or that kill one. Each child gets a free loopback port; stdout is collected for diagnostics.
 * Under `npm test` the tests run from the compiled build (scripts/test-build.mjs), and so do these
 * processes (`src/cli.js` beside the source); run by hand from the sources, they go through tsx.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const COMPILED = existsSync(join(ROOT, 'src', 'cli.js'));
/** The node arguments before a source module run in a child: none in the build, tsx from the sources. */
export const TS_LOADER: readonly string[] = COMPILED ? [] : ['--import', 'tsx'];
/** A source module's path as a child loads it: its compiled .js in the build (no transpiling), else the .ts. */
export const runnable = (path: string): string => (COMPILED ? path.replace(/\.ts$/, '.js') : path);
/** The node arguments that run Orrery's CLI (from the repository's root): the build's, or the sources'. */
export const ORRERY_CLI = [...TS_LOADER, runnable('src/cli.ts')];

import { freePort } from '../../scripts/free-port.mjs';
import { copySqliteTemplate } from './server.ts';

export interface ServerProcess {
  url: string;
  proc: ChildProcess;
  output(): string;
  /** Graceful stop (SIGTERM), resolved when the process exited. */
  stop(): Promise<number | null>;
  /** Abrupt death (SIGKILL), as a crashed machine. */
  kill(): Promise<void>;
}

/** `nodeFlags` go to node before the CLI (e.g. `--import` of a module hook of the test's). */
export async function startServerProcess(
  env: Record<string, string>,
  nodeFlags: readonly string[] = [],
): Promise<ServerProcess> {
  const port = await freePort();
  const dataDir = env.ORRERY_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'orrery-proc-'));
  if (!env.ORRERY_DATABASE_URL) copySqliteTemplate(dataDir);
  const proc = spawn(process.execPath, [...nodeFlags, ...ORRERY_CLI, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ORRERY_LOG_LEVEL: 'warn',
      ...env,
      ORRERY_PORT: String(port),
      ORRERY_HOST: '127.0.0.1',
      ORRERY_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > until) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether the process has exited within `ms`. */
export async function gone(pid: number, ms = 5000): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 20)))
    if (!alive(pid)) return true;
  return !alive(pid);
}

/** Polls `fn` every 100 ms until it returns a value (not undefined); throws after `ms`, naming `what`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
