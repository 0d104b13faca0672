// The CPU backend's kernels live in the shared registry (../../kernels.mjs) under backend
// 'cpu'. A kernel module calls registerKernel(op, run, {dtypes}) for each op it implements.

import { registrarFor, getKernel as lookup } from '../../kernels.mjs';
import { LIMITS } from '../../optable.mjs';

/**
 * A kernel writes its result into `out` (preallocated, node.shape) from its operand values.
 * @typedef {(out: Float32Array, ins: Float32Array[], node: import('../../validate.mjs').CheckedNode,
 *   inShapes: number[][], inDtypes: string[]) => void} Kernel
 */

export const BACKEND = 'cpu';

/**
 * registerKernel(op, run, {dtypes}) -> {op, backend: 'cpu', run, dtypes} in the shared registry.
 * The CPU kernels walk any number of axes: every one handles max_rank.
 */
export const registerKernel = registrarFor(BACKEND, 'run', { maxRank: LIMITS.max_rank });

/** @param {string} op @returns {Kernel|undefined} */
export function getKernel(op) {
  return lookup(op, BACKEND)?.run;
}
