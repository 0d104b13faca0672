// Carries without copies (the native executor's rule, gpulab/native/program.py): when each
// carried output's buffer is written by a dispatch and belongs to one carry only (the usual
// training state), the program records its dispatches twice, the second time with each
// carried input's buffer and its output's buffer swapped, and steps alternate between the
// two recordings, so each step reads the state where the previous one wrote it.

/**
 * The ping-pong pairs {input buffer: output buffer, and back}, or an empty map when the
 * carries do not pair up: a buffer in two carries, a fed input, an output no dispatch writes
 * (an input carried into an input), or buffers of different sizes.
 * @param {import('./plan-data.mjs').Plan} plan
 * @param {Map<number, number>} carry carried input node -> output node
 * @param {(node: number) => number | undefined} bufferOf a node's buffer id
 * @param {Set<number>} fed the fed inputs' buffer ids
 * @param {(buffer: number) => number} bytesOf a buffer's bytes
 * @returns {Map<number, number>}
 */
export function planSwap(plan, carry, bufferOf, fed, bytesOf) {
  const written = new Set();
  for (const step of plan.steps) {
    for (const b of step.bindings.slice(-(step.writes ?? 1))) written.add(b);
  }
  /** @type {Map<number, number>} */
  const swap = new Map();
  for (const [input, output] of carry) {
    const dst = bufferOf(input);
    const src = bufferOf(output);
    if (dst === undefined || src === undefined || src === dst) continue;
    if (swap.has(dst) || swap.has(src) || fed.has(dst) || !written.has(src) ||
        bytesOf(dst) !== bytesOf(src)) {
      return new Map();
    }
    swap.set(dst, src);
    swap.set(src, dst);
  }
  return swap;
}
