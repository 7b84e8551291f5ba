/** util/cpu-quota.ts: a container's CPU quota caps the cores the server counts on. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cgroupCpuQuota, usableCores } from '../../src/util/cpu-quota.ts';

const files = (map: Record<string, string>) => (path: string) => map[path];

describe('usable cores', () => {
  it('reads cgroup v2 cpu.max and v1 cfs quota', () => {
    assert.equal(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' })), undefined);
    assert.equal(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' })), 1.5);
    assert.equal(
      cgroupCpuQuota(
        files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }),
      ),
      undefined,
    );
    assert.equal(
      cgroupCpuQuota(
        files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '100000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }),
      ),
      1,
    );
    assert.equal(cgroupCpuQuota(files({})), undefined);
  });

  it('caps the schedulable CPUs by the quota, rounded up, at least one', () => {
    assert.equal(usableCores(files({ '/sys/fs/cgroup/cpu.max': '100000 100000' }), 16), 1);
    assert.equal(usableCores(files({ '/sys/fs/cgroup/cpu.max': '150000 100000' }), 16), 2);
    assert.equal(usableCores(files({ '/sys/fs/cgroup/cpu.max': '800000 100000' }), 2), 2);
    assert.equal(usableCores(files({ '/sys/fs/cgroup/cpu.max': 'max 100000' }), 4), 4);
    assert.equal(usableCores(files({ '/sys/fs/cgroup/cpu.max': '5000 100000' }), 4), 1);
  });
});
