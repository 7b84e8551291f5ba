/**
 * The idle server gives back the young generation a load grew (src/util/young-generation.ts,
 * issue 22): the decision with stand-ins, then the mechanism on this Node's V8 in a child process
 * run with `npm start`'s young-generation size.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { YoungGenerationTrim, type YoungGenerationDeps } from '../../src/util/young-generation.ts';
import { TS_LOADER, runnable } from '../support/processes.ts';

const MB = 1024 * 1024;

function standIns(over: Partial<YoungGenerationDeps>): YoungGenerationDeps & { scavenges: number } {
  const deps = {
    scavenges: 0,
    newSpaceBytes: () => 16 * MB,
    utilization: () => 0.001,
    ...over,
  } as YoungGenerationDeps & { scavenges: number };
  if (!('scavenge' in over)) deps.scavenge = () => void deps.scavenges++;
  return deps;
}

describe('young generation trim', () => {
  it('scavenges when the event loop was idle and the new space is grown, at every such check', () => {
    const deps = standIns({});
    const trim = new YoungGenerationTrim(deps);
    assert.equal(trim.check(), true);
    assert.equal(
      trim.check(),
      true,
      'the first scavenge after a load may leave the new space grown; the next check tries again',
    );
    assert.equal(deps.scavenges, 2);
  });

  it('leaves a busy server, a new space at rest and a Node without a scavenger alone', () => {
    const busy = standIns({ utilization: () => 0.05 });
    assert.equal(new YoungGenerationTrim(busy).check(), false);
    const atRest = standIns({ newSpaceBytes: () => 2 * MB });
    assert.equal(new YoungGenerationTrim(atRest).check(), false);
    assert.equal(busy.scavenges + atRest.scavenges, 0);
    assert.equal(new YoungGenerationTrim(standIns({ scavenge: undefined })).check(), false);
  });

  it("shrinks this Node's grown new space once idle, without exposing gc to the program", async () => {
    const module = runnable(fileURLToPath(new URL('../../src/util/young-generation.ts', import.meta.url)));
    const script = `
      import { YoungGenerationTrim, processDeps } from ${JSON.stringify(module)};
      import { runInNewContext } from 'node:vm';
      const deps = processDeps();
      const trim = new YoungGenerationTrim(deps);
      let keep = [];
      // A load: allocation until the new space has grown to its maximum (not for a while: a loaded
      // machine would allocate less in it), with a ceiling on the rounds.
      for (let round = 0; round < 20000 && deps.newSpaceBytes() < 16 * 1024 * 1024; round++) { const a = []; for (let i = 0; i < 1000; i++) a.push({ x: 'y'.repeat(50) + i }); keep.push(a); if (keep.length > 30) keep = keep.slice(15); }
      keep = [];
      const grown = deps.newSpaceBytes();
      deps.utilization();
      const checks = [];
      // While grown (over the module's 4 MB), as the server's checks would find it.
      for (let i = 0; i < 8 && deps.newSpaceBytes() > 4 * 1024 * 1024; i++) {
        await new Promise((r) => setTimeout(r, 2500));
        checks.push(trim.check());
      }
      console.log(JSON.stringify({ grown, after: deps.newSpaceBytes(), checks, gc: typeof globalThis.gc, gcInContext: runInNewContext('typeof gc') }));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--max-semi-space-size=8', ...TS_LOADER, '--input-type=module', '-e', script],
      { timeout: 60_000 },
    );
    const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      grown: number;
      after: number;
      checks: boolean[];
      gc: string;
      gcInContext: string;
    };
    assert.equal(r.grown, 16 * MB, 'the load grew the new space to its maximum');
    assert.ok(
      r.after <= 2 * MB,
      `the new space shrank to its size at rest (${r.after} bytes after ${r.checks.length} checks)`,
    );
    // Each check scavenges only when the loop was idle since the previous one; on a loaded
    // machine a descheduled scavenge can make a window look busy (the stand-in test covers the rule).
    assert.ok(r.checks.some(Boolean), `a check of the idle process scavenged (${JSON.stringify(r.checks)})`);
    assert.equal(r.gc, 'undefined');
    assert.equal(r.gcInContext, 'undefined');
  });
});
