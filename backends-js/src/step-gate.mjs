// Cancellation between steps: the CPU backends run a session's steps (and a graph's nodes) in
// one call, which would block dispose() until the whole run ends. A gate
// awaited before each step and node gives the event loop a turn every SLICE_MS of work, so a
// dispose() (or a worker message) gets in, and then refuses with DISPOSED if the program was
// disposed meanwhile. Bounded by the cost model: one node runs at most the backend's limit.
import { GpuLabError } from './errors.mjs';

export const SLICE_MS = 50;

/**
 * One turn of the event loop, after the timers and messages already due: setImmediate in node,
 * setTimeout in browsers (scheduler.yield would resume first, ahead of them: no use here; the
 * 4 ms clamp costs under 10% at one yield per 50 ms).
 */
export function yieldToEventLoop() {
  const g = /** @type {any} */ (globalThis);
  if (typeof g.setImmediate === 'function') return new Promise((resolve) => g.setImmediate(resolve));
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * A gate for one run: await it before each step or node.
 * @param {() => boolean} disposed whether the program was disposed
 * @returns {() => Promise<void>|void}
 */
export function createStepGate(disposed) {
  let since = performance.now();
  const refuse = () => {
    throw new GpuLabError('DISPOSED', 'the program was disposed while it ran (stopped between ' +
      'steps)');
  };
  return () => {
    if (disposed()) refuse();
    if (performance.now() - since < SLICE_MS) return undefined;
    return yieldToEventLoop().then(() => {
      since = performance.now();
      if (disposed()) refuse();
    });
  };
}
