// The wasm kernel registry, keyed by op name (as in TensorFlow.js). A kernel is planned once
// per node at prepare time and returns the step that runs it.

/**
 * What a kernel's plan function gets for one node.
 * @typedef {{
 *   node: import('../../validate.mjs').CheckedNode,
 *   exports: Record<string, any>,
 *   out: number,                                   // slot of the node's result
 *   operand: (i: number) => number,                // slot of operand i (materialized)
 *   view: (i: number) => {slot: number, shape: number[], strides: number[]},  // operand i, maybe a fused transpose
 *   shape: (i: number) => number[],                // shape of operand i
 *   desc: (words: ArrayLike<number>) => number,    // a persistent u32 descriptor in wasm memory
 *   scratch: (floats: number) => void,             // asks for a scratch area of at least this size
 * }} PlanContext
 * A step gets the slot->pointer table and the scratch pointer.
 * @typedef {(ptr: Uint32Array, scratch: number) => void} Step
 * A kernel returns its per-step work, or {init} for work done once after upload (full), or null.
 * @typedef {(ctx: PlanContext) => Step|{init: Step}|null} Kernel
 */

/** @type {Map<string, Kernel>} */
const KERNELS = new Map();

/** @param {string} op @param {Kernel} kernel */
export function registerKernel(op, kernel) {
  KERNELS.set(op, kernel);
}

/** @param {string} op */
export function getKernel(op) {
  return KERNELS.get(op);
}

export function registeredOps() {
  return [...KERNELS.keys()];
}
