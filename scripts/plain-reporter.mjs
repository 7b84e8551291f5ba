// A node:test reporter that ends with the plain closing line "N passed, N failed, N skipped", how
// many tests ran on each dialect (a test counts for the dialect its name or a suite around it
// starts with, as `sqlite: …` / `postgres: …`), and the files that took longest. With
// ORRERY_TEST_COUNTS set (scripts/test.mjs runs the files in two batches), it writes these there
// as JSON lines instead, and test.mjs prints them for both batches.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

const DIALECT = /^(sqlite|postgres)\b/;

export default async function* plainReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const byDialect = { sqlite: 0, postgres: 0 };
  // Per file: the leaves whose suites have not ended yet (by nesting), and the time its top-level
  // tests and suites took.
  const pending = new Map();
  const seconds = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file = '', nesting, name, details } = event.data;
    const leaves = pending.get(file) ?? [];
    pending.set(file, leaves);
    if (nesting === 0) seconds.set(file, (seconds.get(file) ?? 0) + (details?.duration_ms ?? 0) / 1000);
    const dialect = DIALECT.exec(name)?.[1];
    if (details?.type === 'suite') {
      // A suite ends after its tests: the pending ones nested deeper are its own.
      const own = leaves.filter((l) => l.nesting > nesting);
      pending.set(
        file,
        leaves.filter((l) => l.nesting <= nesting),
      );
      if (!dialect) pending.get(file).push(...own.map((l) => ({ ...l, nesting })));
      else for (const l of own) if (l.ran) byDialect[dialect]++;
      continue;
    }
    const ran = !(event.data.skip || event.data.todo);
    if (!ran) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
    if (dialect) byDialect[dialect] += ran ? 1 : 0;
    else if (nesting > 0) leaves.push({ nesting, ran });
  }
  const slowest = [...seconds]
    .sort((a, b) => b[1] - a[1])
    .map(([file, s]) => [repositoryPath(file), Math.round(s * 10) / 10]);
  const summary = { passed, failed, skipped, byDialect, files: slowest };
  if (process.env.ORRERY_TEST_COUNTS) appendFileSync(process.env.ORRERY_TEST_COUNTS, JSON.stringify(summary) + '\n');
  else yield closingLines([summary]);
}

/** `test/x.test.ts` for the compiled file or its source (scripts/test.mjs names both roots). */
function repositoryPath(file) {
  for (const root of [process.env.ORRERY_TEST_BUILD, process.env.ORRERY_TEST_ROOT, process.cwd()]) {
    if (root && !relative(root, file).startsWith('..')) return relative(root, file).replace(/\.js$/, '.ts');
  }
  return file;
}

/** The closing lines for the summaries of one or more batches. */
export function closingLines(summaries, slowest = 10) {
  const sum = (f) => summaries.reduce((n, s) => n + f(s), 0);
  const files = summaries.flatMap((s) => s.files).sort((a, b) => b[1] - a[1]);
  const total = files.reduce((n, [, s]) => n + s, 0);
  return [
    '',
    `slowest files (of ${files.length}, ${Math.round(total)} s of tests in all):`,
    ...files.slice(0, slowest).map(([f, s]) => `  ${s.toFixed(1).padStart(6)} s  ${f}`),
    `ran on sqlite: ${sum((s) => s.byDialect.sqlite)}, on postgres: ${sum((s) => s.byDialect.postgres)}`,
    `${sum((s) => s.passed)} passed, ${sum((s) => s.failed)} failed, ${sum((s) => s.skipped)} skipped`,
    '',
  ].join('\n');
}

/**
 * The files that took the most CPU time (their process and its children, user and system), from
 * the JSON lines of scripts/test-cpu-probe.mjs: the measure to compare a test file by before and
 * after a change, since wall time depends on what else the machine runs.
 */
export function cpuLines(jsonLines, buildRoot, most = 10) {
  const files = jsonLines
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .map(({ file, cpu }) => [relative(buildRoot, file).replace(/\.js$/, '.ts'), cpu])
    .sort((a, b) => b[1] - a[1]);
  if (!files.length) return '';
  const total = files.reduce((n, [, s]) => n + s, 0);
  return [
    '',
    `most CPU time (of ${files.length} files, ${Math.round(total)} s of CPU in all, their processes and children):`,
    ...files.slice(0, most).map(([f, s]) => `  ${s.toFixed(1).padStart(6)} s  ${f}`),
  ].join('\n');
}
