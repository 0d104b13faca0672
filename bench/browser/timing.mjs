// Timing for the benchmark lanes: warm-up calls, then timed calls; median and minimum in ms.
// A time budget may stop a slow mode early (software renderers), never below MIN_RUNS; the
// result says how many runs it holds and the budget it ran under, so a short series shows.

export const MIN_RUNS = 5;
/** Fewest runs of 8 steps (24 timed steps) under a budget. */
export const MIN_RUNS_8 = 3;

/**
 * @typedef {{median: number, min: number, n: number, samples: number[], budgetS: number}} Stats
 * @typedef {{runs: number, warmup: number, budgetS?: number, per?: number, minRuns?: number}} TimeOptions
 */

/** @param {number[]} sorted ascending @returns {number} */
function medianOf(sorted) {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Call `fn` `warmup` times untimed, then up to `runs` times timed; ms per call divided by `per`
 * (steps per call). With `budgetS` > 0, stop once that many seconds of timed calls are spent
 * and at least `minRuns` (default MIN_RUNS) are in.
 * @param {() => Promise<unknown>} fn @param {TimeOptions} options @returns {Promise<Stats>}
 */
export async function time(fn, { runs, warmup, budgetS = 0, per = 1, minRuns = MIN_RUNS }) {
  for (let i = 0; i < warmup; i++) await fn();
  /** @type {number[]} */
  const samples = [];
  const start = performance.now();
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push((performance.now() - t0) / per);
    const spent = (performance.now() - start) / 1000;
    if (budgetS > 0 && spent > budgetS && samples.length >= minRuns) break;
  }
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: medianOf(sorted), min: sorted[0], n: samples.length, samples, budgetS };
}
