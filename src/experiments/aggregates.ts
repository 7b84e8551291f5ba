/**
 * An experiment's figures per variant, from its cells: per evaluator the mean, min, max, count,
 * pass rate and distribution of its scores; the latency percentiles, tokens and cost of its runs.
 * Pure and ordered, so that the same cells always give the same figures (tests assert them).
 */
import type { CellRow, CellScores } from './store.ts';

/** A number passes from this value up; true passes, false does not (docs/guides/evaluation.md). */
const PASS_THRESHOLD = 0.5;
/** Distinct values a distribution lists one by one; beyond, numbers go in DISTRIBUTION_BUCKETS equal ranges. */
const DISTINCT_VALUES = 20;
const DISTRIBUTION_BUCKETS = 10;

interface ScoreFigures {
  mean: number | null;
  min: number | null;
  max: number | null;
  count: number;
  errors: number;
  pass_rate: number | null;
  distribution: Record<string, number>;
}

export interface VariantFigures {
  name: string;
  runs: { completed: number; failed: number };
  scores: Record<string, ScoreFigures>;
  latency: { p50: number | null; p95: number | null };
  /** Tokens of its runs in all; token_use splits them. */
  tokens: number;
  token_use: { prompt: number; result: number; total: number };
  cost: number;
}

/** Rounded so that sums of binary fractions read as the figures a person computes (0.1 + 0.2). */
const round = (n: number) => Math.round(n * 1e9) / 1e9;

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], q: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

function distributionOf(values: ReadonlyArray<number | boolean | string>): Record<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(String(v), (counts.get(String(v)) ?? 0) + 1);
  const numbers = values.filter((v): v is number => typeof v === 'number');
  if (counts.size <= DISTINCT_VALUES || numbers.length !== values.length)
    return Object.fromEntries([...counts].sort(([a], [b]) => compareKeys(a, b)));
  const min = Math.min(...numbers);
  const width = (Math.max(...numbers) - min) / DISTRIBUTION_BUCKETS;
  const out: Record<string, number> = {};
  for (let b = 0; b < DISTRIBUTION_BUCKETS; b++)
    out[`[${round(min + b * width)}, ${round(min + (b + 1) * width)})`] = 0;
  const keys = Object.keys(out);
  for (const n of numbers) out[keys[Math.min(DISTRIBUTION_BUCKETS - 1, Math.floor((n - min) / width))]]++;
  return out;
}

const compareKeys = (a: string, b: string) => {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
};

function figuresOf(entries: ReadonlyArray<CellScores[string]>): ScoreFigures {
  const values: Array<number | boolean | string> = [];
  let errors = 0;
  for (const e of entries) {
    if ('error' in e) errors++;
    else values.push(e.value);
  }
  // Booleans count as 1 and 0 in the mean; category strings have a distribution only.
  const numeric = values
    .filter((v) => typeof v !== 'string')
    .map((v) => (v === true ? 1 : v === false ? 0 : v)) as number[];
  const passes = values.filter((v) => v === true || (typeof v === 'number' && v >= PASS_THRESHOLD)).length;
  return {
    mean: numeric.length ? round(numeric.reduce((a, b) => a + b, 0) / numeric.length) : null,
    min: numeric.length ? Math.min(...numeric) : null,
    max: numeric.length ? Math.max(...numeric) : null,
    count: values.length,
    errors,
    pass_rate: numeric.length ? round(passes / numeric.length) : null,
    distribution: distributionOf(values),
  };
}

/** Figures of each variant (in the experiment's order), over its cells that ran. */
export function aggregate(
  variants: readonly string[],
  evaluators: readonly string[],
  cells: readonly CellRow[],
): VariantFigures[] {
  return variants.map((name) => {
    // Cells that ended; `error` is the run's (evaluators' errors are in `scores`).
    const mine = cells.filter((c) => c.variant === name && (c.status === 'completed' || c.status === 'failed'));
    const scores: Record<string, ScoreFigures> = {};
    for (const ev of evaluators)
      scores[ev] = figuresOf(mine.flatMap((c) => (c.scores && c.scores[ev] ? [c.scores[ev]] : [])));
    // Latency of the runs that completed (a failed run's time says little of the variant).
    const latencies = mine
      .filter((c) => c.error === null)
      .map((c) => c.latency_ms)
      .filter((v): v is number => v !== null)
      .sort((a, b) => a - b);
    const prompt = mine.reduce((n, c) => n + (c.prompt_tokens ?? 0), 0);
    const result = mine.reduce((n, c) => n + (c.result_tokens ?? 0), 0);
    return {
      name,
      runs: {
        completed: mine.filter((c) => c.error === null).length,
        failed: mine.filter((c) => c.error !== null).length,
      },
      scores,
      latency: { p50: percentile(latencies, 0.5), p95: percentile(latencies, 0.95) },
      tokens: prompt + result,
      token_use: { prompt, result, total: prompt + result },
      cost: round(mine.reduce((n, c) => n + (c.cost ?? 0), 0)),
    };
  });
}
