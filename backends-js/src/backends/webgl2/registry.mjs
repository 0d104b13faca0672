// The webgl2 kernels, in the shared registry (../../kernels.mjs, backend 'webgl2'): op name ->
// a function that turns one checked node into GPU passes. A pass is one draw of one shader
// into one tensor texture:
//   { shader: 'binary.glsl', defines: {OP_add: 1}, inputs: {u_a: slot, ...},
//     uniforms: {u_shape: ['i4', [1, 1, 2, 3]], ...}, target: slot }
// Slots are indices into the program's texture table, so a session can swap carried tensors
// between steps without re-recording anything.

import { stridesOf } from '../../shapes.mjs';
import { registrarFor, getKernel as lookup } from '../../kernels.mjs';
/**
 * @typedef {{shader: string, defines?: Record<string, string|number>, inputs?: Record<string, number>,
 *   uniforms?: Record<string, [string, any]>, target: number, alsoTargets?: number[]}} Pass
 *   alsoTargets: further slots of target's size the shader writes (color attachments 1, 2, ...)
 * @typedef {object} KernelContext
 * @property {(id: number) => number} slot     texture slot of a node's tensor
 * @property {(id: number) => number[]} shape  shape of a node
 * @property {number} out                      slot of this node's output
 * @property {number} maxTextureSize            the texture width/height limit
 * @property {{flatMatmul: boolean, blockRows: number, packing: boolean, shortRows: boolean,
 *   epilogue: boolean}} options
 *   how matmul blocks: the flat path only (test hook), rows per block (8 where the context has
 *   8 draw buffers, else 4); packing: whether tensors may be stored packed; shortRows: whether
 *   rows of <= 64 elements take reduce.glsl's spelled-out tree; epilogue: whether an add / sub /
 *   mul takes a matmul operand into its pass (all on unless a test hook)
 * @property {(id: number) => number|undefined} transposeSource  for an operand that is a
 *   transpose the program does not compute: the node it transposes (read that instead)
 * @property {(id: number) => boolean} absorbed  whether this kernel computes operand id itself
 * @property {(id: number) => any} node          a checked node by id
 * @property {(n: number) => number} temp      a scratch tensor of n elements for this node
 * @property {(n: number) => number} check   an index op's check texture of n uint32 words
 *   (index.mjs), kept and read back by the program after every step
 * @property {(id: number) => boolean} packed  whether a node's tensor (or this node's output, k.out)
 *   is stored packed (packing.mjs: RGBA32F, 4 elements of a row per texel, a row per texture row)
 * @property {(key: string, make: (alloc: (n: number, format?: any) => number) =>
 *   {value: any, passes: Pass[]}) => {value: any, passes: Pass[]}} shared  a value several
 *   nodes of a program compute alike (the key names what it is computed from): the first call
 *   makes it (its slots from alloc are never recycled) and records its passes, later calls get
 *   the value and no passes
 * @property {(texels: number, format?: {layers?: number, width?: number}) => number} temp4
 *   a packed RGBA32F scratch texture of that many texels (per layer), optionally a 4-layer array
 *   or with a fixed width
 * @typedef {(node: any, k: KernelContext) => Pass[]} Kernel
 */

/**
 * @typedef {(node: any, graph: {nodeOf: (id: number) => any, pinned: (id: number) => boolean,
 *   options: KernelContext['options']}) => number[][]} Absorbs  sets of operand nodes the kernel
 *   can compute itself, preferred first
 * @typedef {{build: Kernel, constant: boolean, readsTransposed: boolean, absorbs: Absorbs|null,
 *   packs: import('./packing.mjs').Packs|null}} KernelEntry
 */

export const BACKEND = 'webgl2';

const register = registrarFor(BACKEND, 'build');

/**
 * Register a kernel in the shared registry (../../kernels.mjs) under backend 'webgl2'.
 * @param {string} op
 * @param {Kernel} build
 * @param {{constant?: boolean, readsTransposed?: boolean, absorbs?: Absorbs,
 *   packs?: import('./packing.mjs').Packs, dtypes?: string[]}} [opts]
 *   constant: the result never changes (computed once at prepare);
 *   readsTransposed: the kernel can read a transpose operand from its source
 *   (k.transposeSource), so a transpose consumed only by such kernels is never computed;
 *   absorbs: sets of operand nodes the kernel can compute in its own passes (fusion); where
 *   the program takes one (they feed nothing outside the set) they are not recorded on their
 *   own, k.absorbed(id) says so, and the kernel computes them (writing k.slot(id) where the
 *   value is needed outside);
 *   packs: which operands the kernel reads packed and which nodes it writes packed
 *   (packing.mjs), k.packed(id) says what the program chose;
 *   dtypes: the node dtypes it handles (default float32)
 */
export function registerKernel(op, build, { constant = false, readsTransposed = false,
  absorbs = null, packs = null, dtypes = undefined } = {}) {
  register(op, build, { constant, readsTransposed, absorbs, packs, ...(dtypes ? { dtypes } : {}) });
}

/** @param {string} op @returns {KernelEntry|undefined} */
export function kernelFor(op) {
  return lookup(op, BACKEND);
}

/** A shape padded at the front with 1s to rank 4. @param {number[]} shape */
export function pad4(shape) {
  return [...Array(4 - shape.length).fill(1), ...shape];
}

// Row-major strides: the one definition in shapes.mjs (re-exported for the kernel modules).
export { stridesOf };

/**
 * Strides of `shape` along the axes of `outShape` (aligned right), 0 where `shape` broadcasts,
 * padded to rank 4.
 * @param {number[]} shape @param {number[]} outShape
 */
export function broadcastStrides(shape, outShape) {
  const strides = stridesOf(shape);
  const out = [0, 0, 0, 0];
  for (let i = 0; i < shape.length; i++) {
    const axis = 4 - shape.length + i;
    out[axis] = shape[i] === 1 && outShape[outShape.length - shape.length + i] !== 1 ? 0 : strides[i];
  }
  return out;
}

/** @param {number[]} shape */
export function sizeOf(shape) {
  return shape.reduce((a, b) => a * b, 1);
}
