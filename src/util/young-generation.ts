/**
 * Gives back the young generation that V8 grew under load, once the server is idle (issue 22).
 *
 * Under load V8's new space grows to its maximum (16 MB with `npm start`'s
 * `--max-semi-space-size=8`). It shrinks again only in a collection made while the program
 * allocates slowly (V8's `Heap::ReduceNewSpaceSize`) or in one of V8's memory reducer, which
 * starts only after a full collection finds the old generation grown: after a load with little
 * old-space garbage it may never start, and an idle server makes no collections at all, so the
 * 15 MB stayed resident (bench/README.md, issue 22, tenth pass). Every CHECK_MS, when the event
 * loop was almost idle since the last check and the new space is still grown, one scavenge (a
 * millisecond or two: the new space holds little by then) lets V8 apply its own rule. The first
 * after a load often leaves it as it is (V8's estimate of the allocation rate still holds the load);
 * the next, a check later, shrinks it. No full collection: it pauses for tens of milliseconds, and
 * one made at idle left the resident memory where it was (eighth pass).
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHECK_MS = 10_000;
/** Busy under this share of the time since the last check: idle. */
const IDLE_UTILIZATION = 0.02;
/**
 * A new space above this has grown under load. At rest V8 keeps 1-2 MB (a scavenge may grow it by
 * a step); 4 MB leaves that alone, so an idle server scavenges only after a load.
 */
const GROWN_BYTES = 4 * 1024 * 1024;

export interface YoungGenerationDeps {
  /** A scavenge; undefined when this Node does not give one. */
  scavenge?: () => void;
  newSpaceBytes: () => number;
  /** The event loop's busy share since the last call. */
  utilization: () => number;
}

/** Decides at each check. */
export class YoungGenerationTrim {
  constructor(private readonly deps: YoungGenerationDeps) {}

  /** True when it scavenged. */
  check(): boolean {
    const busy = this.deps.utilization();
    if (!this.deps.scavenge || busy >= IDLE_UTILIZATION || this.deps.newSpaceBytes() <= GROWN_BYTES) return false;
    this.deps.scavenge();
    return true;
  }
}

/** Starts the checks for `orrery serve`; answers the function that stops them. */
export function startYoungGenerationTrim(): () => void {
  const trim = new YoungGenerationTrim(processDeps());
  const timer = setInterval(() => trim.check(), CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export function processDeps(): YoungGenerationDeps {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return {
    scavenge: scavenger(),
    newSpaceBytes: () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0,
    utilization: () => {
      const now = performance.eventLoopUtilization();
      const share = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      return share;
    },
  };
}

/**
 * V8's `gc` without exposing it to every context: the flag is on only while one new context is
 * made, as jest's leak detector does. A `{type: 'minor'}` collection is a scavenge.
 */
function scavenger(): (() => void) | undefined {
  type Gc = (options?: { type: 'minor' | 'major' }) => void;
  const exposed = (globalThis as { gc?: Gc }).gc;
  if (exposed) return () => exposed({ type: 'minor' });
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as Gc | undefined;
    setFlagsFromString('--no-expose-gc');
    return gc ? () => gc({ type: 'minor' }) : undefined;
  } catch {
    return undefined;
  }
}
