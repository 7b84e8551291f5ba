// A node:test reporter that ends with the plain closing line "N passed, N failed, N skipped".
// With ORRERY_TEST_COUNTS set (scripts/test.mjs runs the files in two batches), it writes the
// counts there instead, and test.mjs prints the line for both batches.
import { appendFileSync } from 'node:fs';

export default async function* plainReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.data.details?.type === 'suite') continue;
    if (event.data.skip || event.data.todo) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
  }
  if (process.env.ORRERY_TEST_COUNTS)
    appendFileSync(process.env.ORRERY_TEST_COUNTS, `${passed} ${failed} ${skipped}\n`);
  else yield `\n${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}
