// The CPU kernel registry, keyed by op name (as in TensorFlow.js): a kernel module calls
// registerKernel for each op it implements; the program looks kernels up by name.

/**
 * A kernel writes its result into `out` (preallocated, node.shape) from its operand values.
 * @typedef {(out: Float32Array, ins: Float32Array[], node: import('../../validate.mjs').CheckedNode,
 *   inShapes: number[][]) => void} Kernel
 */

/** @type {Map<string, Kernel>} */
const KERNELS = new Map();

/** @param {string} op @param {Kernel} kernel */
export function registerKernel(op, kernel) {
  KERNELS.set(op, kernel);
}

/** @param {string} op @returns {Kernel|undefined} */
export function getKernel(op) {
  return KERNELS.get(op);
}

/** @returns {string[]} */
export function registeredOps() {
  return [...KERNELS.keys()];
}
