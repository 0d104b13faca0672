// The wasm backend's kernels live in the shared registry (../../kernels.mjs) under backend
// 'wasm'. A kernel is planned once per node at prepare time and returns the step that runs it.

import { registrarFor, getKernel as lookup } from '../../kernels.mjs';

/**
 * What a kernel's plan function gets for one node.
 * @typedef {{
 *   node: import('../../validate.mjs').CheckedNode,
 *   exports: Record<string, any>,
 *   out: number,                                   // slot of the node's result
 *   operand: (i: number) => number,                // slot of operand i (materialized)
 *   view: (i: number) => {slot: number, shape: number[], strides: number[]},  // operand i, maybe a fused transpose
 *   shape: (i: number) => number[],                // shape of operand i
 *   dtype: (i: number) => string,                  // dtype of operand i
 *   desc: (words: ArrayLike<number>) => number,    // a persistent u32 descriptor in wasm memory
 *   scratch: (floats: number) => void,             // asks for a scratch area of at least this size
 * }} PlanContext
 * A step gets the slot->pointer table and the scratch pointer.
 * @typedef {(ptr: Uint32Array, scratch: number) => void} Step
 * A kernel returns its per-step work, or {init} for work done once after upload (full), or null.
 * @typedef {(ctx: PlanContext) => Step|{init: Step}|null} Kernel
 */

export const BACKEND = 'wasm';

/** registerKernel(op, plan, {dtypes}) -> {op, backend: 'wasm', plan, dtypes} in the shared registry. */
export const registerKernel = registrarFor(BACKEND, 'plan');

/** @param {string} op @returns {Kernel|undefined} */
export function getKernel(op) {
  return lookup(op, BACKEND)?.plan;
}
