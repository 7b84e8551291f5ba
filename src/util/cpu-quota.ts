/**
 * Cores this process may really use: `os.availableParallelism()` counts the CPUs it may be
 * scheduled on, but a container's CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` over
 * `cpu.cfs_period_us`) can allow less than that; a 1-core quota on a 16-CPU host is one core.
 * Used before starting threads that only pay off on a second core (the SQLite run writer).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

type Read = (path: string) => string | undefined;

const readText: Read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** The quota in cores (fractional), or undefined when there is none or it cannot be read. */
export function cgroupCpuQuota(read: Read = readText): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2.length >= 1) {
    if (v2[0] === 'max') return undefined;
    const quota = Number(v2[0]);
    const period = Number(v2[1] ?? 100_000);
    return quota > 0 && period > 0 ? quota / period : undefined;
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  return quota > 0 && period > 0 ? quota / period : undefined;
}

/** Whole cores usable: the schedulable CPUs, capped by the quota rounded up (1.5 cores lets two threads run). */
export function usableCores(read: Read = readText, cpus = availableParallelism()): number {
  const quota = cgroupCpuQuota(read);
  return Math.max(1, quota === undefined ? cpus : Math.min(cpus, Math.ceil(quota)));
}
