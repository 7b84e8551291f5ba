/**
 * A run's conversation as the API exposes it: the run carries `previous_run` (the run it
 * continues), and GET /runs?previous_run=<id> lists the runs that continue it. The turns before a
 * run are read run by run (GET /runs/:id, the official client), at most MAX_TURNS of them: the
 * server's own bound on a conversation (ORRERY_CONVERSATION_MAX_TURNS, 200 by default).
 */
import { apiFetch, client } from '../../api/client.ts';
import { errorStatus } from '../../api/errors.ts';
import type { RunRef } from './runsApi.ts';

const MAX_TURNS = 200;
/** Forks of one run are rare; past this many, the list says "more". */
export const MAX_NEXT = 50;

export interface TurnRun {
  id: string;
  status: string;
  prompt?: unknown;
  result?: unknown;
  tool_use?: unknown;
  previous_run?: string;
  error?: { code?: string; message?: string };
}

export interface Chain {
  /** The runs of the conversation before this one, oldest first. */
  runs: TurnRun[];
  /** Set when the walk stopped before the first turn: the run it could not read, and why. */
  cut?: { id: string; reason: string };
}

/** The turns before a run, from the run it continues (`previous`) back to the first. */
export async function fetchEarlier(previous: string | undefined): Promise<Chain> {
  const runs: TurnRun[] = [];
  let prev: string | undefined = previous;
  while (prev) {
    const id: string = prev;
    if (runs.length >= MAX_TURNS - 1)
      return { runs: runs.reverse(), cut: { id, reason: `only the last ${MAX_TURNS} turns are shown` } };
    try {
      const r = (await client().runs.retrieve(id)) as unknown as TurnRun;
      runs.push(r);
      prev = r.previous_run;
    } catch (err) {
      if (errorStatus(err) !== 404) throw err;
      return { runs: runs.reverse(), cut: { id, reason: 'it is not found in this project' } };
    }
  }
  return { runs: runs.reverse() };
}

export const fetchNextRuns = (runId: string): Promise<RunRef[]> =>
  apiFetch<RunRef[]>('/runs', { query: { previous_run: runId, limit: MAX_NEXT } });
