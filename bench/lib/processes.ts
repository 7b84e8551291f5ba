/** Benchmark plumbing: servers run as child processes so the load generator never shares their CPU time. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname;

import { freePort } from '../../scripts/free-port.mjs';
import { startOptionsOf } from '../../scripts/start-options.mjs';

export { freePort };

export interface Child {
  url: string;
  proc: ChildProcess;
  /** Peak resident set size of the child so far, in bytes (from /proc). */
  peakRss(): number;
  stop(): Promise<void>;
}

async function waitFor(url: string, ms = 60_000) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok || r.status === 404) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `cwd`: the checkout to run (another one for an A/B of two commits); this one by default. */
export async function startChild(
  args: string[],
  env: Record<string, string>,
  healthPath: string,
  cwd = ROOT,
): Promise<Child> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd,
    env: { ...process.env, ...env, ORRERY_PORT: String(port), BARE_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + healthPath);
  return {
    url,
    proc,
    peakRss: () => {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    stop: () =>
      new Promise((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** The node options of a checkout's `npm start`; none for an older checkout whose start script ran the sources. */
export const startFlagsOf = (checkout: string): string[] => startOptionsOf(checkout) ?? [];

/**
 * An Orrery server on a fresh temporary data folder (SQLite) or the given database URL, from the
 * sources of `cwd`, with the node options its `npm start` gives the build and then `nodeArgs`
 * (V8's too, which NODE_OPTIONS does not take).
 */
export async function startOrrery(
  extraEnv: Record<string, string> = {},
  cwd = ROOT,
  nodeArgs: string[] = [],
): Promise<Child & { adminKey: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-bench-'));
  const adminKey = 'sk-bench-admin-key-0123456789abcdef';
  const child = await startChild(
    [...startFlagsOf(cwd), ...nodeArgs, 'src/cli.ts', 'serve'],
    { ORRERY_DATA_DIR: dataDir, ORRERY_ADMIN_KEY: adminKey, ORRERY_LOG_LEVEL: 'warn', ...extraEnv },
    '/health',
    cwd,
  );
  return {
    ...child,
    adminKey,
    dataDir,
    stop: async () => {
      await child.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

export const machine = () => {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU';
  return `${cpu}, ${(process.env.NPROC ?? '').trim() || require_nproc()} cores, Node ${process.version}`;
};

function require_nproc(): number {
  return readFileSync('/proc/cpuinfo', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('processor')).length;
}
