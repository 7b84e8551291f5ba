// `npm run lint`, the import boundaries: dependency-cruiser's rules (.dependency-cruiser.cjs) over
// src/, then the folder cycles (scripts/folder-cycles.mjs) over the same module graph, cruised once.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
const dir = mkdtempSync(join(tmpdir(), 'orrery-depcruise-'));
const graph = join(dir, 'graph.json');
try {
  // The JSON output holds the violations too; one cruise serves both checks. Its exit status is
  // the number of errors, so the output is read whatever the status.
  const run = spawnSync(depcruise, ['src', '--output-type', 'json'], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
    encoding: 'utf8',
  });
  if (!run.stdout) throw new Error(`depcruise failed: ${run.stderr || run.error?.message}`);
  writeFileSync(graph, run.stdout);
  const { summary } = JSON.parse(run.stdout);
  for (const v of summary.violations)
    console.error(
      `error ${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle: ${v.cycle.map((c) => c.name ?? c).join(' → ')})` : ''}`,
    );
  if (summary.violations.length) {
    console.error(
      `\n${summary.violations.length} import boundary violations (.dependency-cruiser.cjs says why each rule holds)`,
    );
    process.exitCode = 1;
  } else console.log(`import boundaries: ${summary.totalCruised} modules, no violation`);
  const cycles = spawnSync(process.execPath, [join(root, 'scripts', 'folder-cycles.mjs'), graph], {
    cwd: root,
    stdio: 'inherit',
  });
  if (cycles.status !== 0) process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
