// Preloaded (`--import`) into every test file's process by scripts/test.mjs: at exit it appends to
// ORRERY_TEST_CPU the CPU time of the file's process (all its threads) and of the children it
// waited for (servers, CLIs, the browser), from /proc/self/stat. CPU time, unlike wall time, stays
// comparable on a loaded machine, so it is the figure to compare a change of a test file by.
import { appendFileSync, readFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const out = process.env.ORRERY_TEST_CPU;
// node:test marks the processes of test files (not the runner's own, nor their children).
if (out && isMainThread && process.env.NODE_TEST_CONTEXT?.startsWith('child') && process.argv[1]) {
  const ticks = Number(process.env.ORRERY_TEST_CLK_TCK) || 100;
  process.on('exit', () => {
    try {
      const stat = readFileSync('/proc/self/stat', 'utf8');
      // After the command's name in parentheses: utime, stime, cutime, cstime are the 12th to 15th.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cpu = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / ticks;
      appendFileSync(out, JSON.stringify({ file: process.argv[1], cpu }) + '\n');
    } catch {
      // No /proc (not Linux): the summary has no CPU figures.
    }
  });
}
