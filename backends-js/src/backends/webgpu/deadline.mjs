// The per-submission deadline (docs/protocol.md, default 2 s): a run or download whose
// submitted work is not done by then destroys the device, so the session is poisoned (the
// error names the deadline) and the runtime must be recreated. Software adapters cannot
// interrupt a running shader (docs/protocol.md "Quotas" says what was measured); destroying the
// device is what WebGPU offers, and every later call on this backend refuses at once.
// A student's endless loop is stopped before this by the loop budget (wgsl-budget.mjs): on
// SwiftShader a shader still running after destroy() keeps WebGPU busy for the whole browser.
import { GpuLabError } from '../../errors.mjs';

export const DEFAULT_DEADLINE_MS = 2000;
export const MAX_DEADLINE_MS = 600000;

/**
 * The deadline option: an integer of milliseconds from 1 to MAX_DEADLINE_MS, applied to every
 * submission; absent (null): 2000 ms for programs that run a student's kernel (wgsl) and none
 * for the others (our kernels are bounded by the protocol's limits; a software adapter runs
 * the large corpus cases for longer than 2 s).
 * @param {unknown} value @returns {number|null}
 */
export function deadlineOption(value) {
  if (value === undefined || value === null) return null;
  const ms = value;
  if (!Number.isInteger(ms) || /** @type {number} */ (ms) < 1 || /** @type {number} */ (ms) > MAX_DEADLINE_MS) {
    throw new GpuLabError('VALIDATION', `deadlineMs must be an integer from 1 to ${MAX_DEADLINE_MS}, ` +
      `got ${String(value)}`);
  }
  return /** @type {number} */ (ms);
}

/**
 * Wait for the queue's submitted work, at most `ms` since `since` (a run in chunks checks the
 * one deadline of the run between its submissions: student-chunks.mjs); past it destroy the
 * device and throw.
 * @param {import('./device.mjs').GpuDevice} gpu @param {number|null} ms @param {string} what
 * @param {number} [since] performance.now() when the deadline's clock started
 */
export async function withinDeadline(gpu, ms, what, since = performance.now()) {
  if (ms === null) return;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const left = Math.max(0, since + ms - performance.now());
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve('late'), left); });
  const done = gpu.device.queue.onSubmittedWorkDone().then(() => 'done');
  let first;
  try {
    first = await gpu.race(Promise.race([done, late]), what);
  } finally {
    clearTimeout(timer);
  }
  if (first !== 'late') return;
  const message = `${what}: the submission ran past the ${ms} ms deadline (deadlineMs); the ` +
    'WebGPU device was destroyed: dispose this runtime and create a new one';
  gpu.device.destroy();
  gpu.lost.then(() => { gpu.lostMessage = message; });
  gpu.lostMessage = message;
  throw new GpuLabError('BACKEND', message);
}
