// The timing helper: warm-up calls are untimed, medians and minimums are right, and a budget
// stops a slow mode only once its minimum number of runs is in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_RUNS, time } from '../timing.mjs';

/** A function whose i-th call takes delays[i] ms (busy wait: setTimeout is too coarse). */
function delayed(delays) {
  let call = 0;
  return async () => {
    const until = performance.now() + delays[call++];
    while (performance.now() < until) { /* spin */ }
  };
}

// Bounds leave room for a busy machine: a wrong helper misses them by the delays' gaps.
test('warm-up calls are not timed; median and min of the timed calls', async () => {
  const s = await time(delayed([200, 200, 1, 60, 25]), { runs: 3, warmup: 2 });
  assert.equal(s.n, 3);
  assert.ok(s.min >= 1 && s.min < 25, `min ${s.min}`);
  assert.ok(s.median >= 25 && s.median < 60, `median ${s.median}`);
  assert.equal(Math.min(...s.samples), s.min);
});

test('per divides each sample by the steps per call', async () => {
  const s = await time(delayed([40, 40]), { runs: 2, warmup: 0, per: 8 });
  assert.ok(s.median >= 5 && s.median < 40, `median ${s.median}`);
});

test('a budget stops after the minimum runs, never before', async () => {
  const slow = Array(20).fill(15);
  const cut = await time(delayed(slow), { runs: 20, warmup: 0, budgetS: 0.001 });
  assert.equal(cut.n, MIN_RUNS);
  assert.equal(cut.budgetS, 0.001);
  const three = await time(delayed(slow), { runs: 20, warmup: 0, budgetS: 0.001, minRuns: 3 });
  assert.equal(three.n, 3);
  const none = await time(delayed(Array(8).fill(1)), { runs: 8, warmup: 0 });
  assert.equal(none.n, 8);
});
