// Reading the plan (docs/plan.md): which buffer holds a node, what an upload writes, and the
// bytes of every step's uniform.
import { toDeviceWords } from '../../dtypes.mjs';

/**
 * @typedef {{id: number, elements: number, node?: number, kind?: string}} PlanBuffer
 * @typedef {{node?: number, kernel: string, entry?: string, overrides?: Record<string, number>,
 *   params?: Array<[string, number]>, bindings: number[], dispatch: number[]}} PlanStep
 * @typedef {{buffers: PlanBuffer[], values: Array<{node: number, buffer: number, alias: boolean}>,
 *   uploads?: Array<{buffer: number, node: number}>, steps: PlanStep[],
 *   outputs?: Array<{name: string, buffer: number, shape: number[], node?: number}>}} Plan
 * @typedef {{id: number, op: string, shape: number[], data?: import('../../dtypes.mjs').TypedData,
 *   attrs?: Record<string, unknown>}} CheckedNode
 */

/**
 * node id -> plan buffer id, from the plan's `values` (views share their operand's buffer).
 * @param {Plan} plan
 */
export function nodeBuffers(plan) {
  return new Map((plan.values || []).map((v) => [v.node, v.buffer]));
}

/**
 * The values an upload writes: an input's data or a `full` node's value.
 * @param {CheckedNode} node
 * @returns {Float32Array | Uint32Array | null} null for a fed input (written per step)
 */
export function uploadData(node) {
  // checked data is a typed array of the node's dtype: its 32-bit words (bool widened to u32)
  if (node.data) return toDeviceWords(node.data, /** @type {any} */ (node).dtype);
  if (node.op === 'full') {
    const n = node.shape.reduce((a, d) => a * d, 1);
    return new Float32Array(n).fill(toNumber(node.attrs?.value));
  }
  return null;
}

/** @param {unknown} v a number or "nan"/"inf"/"-inf" (the protocol's JSON spelling) */
function toNumber(v) {
  if (typeof v === 'number') return v;
  if (v === 'nan') return NaN;
  if (v === 'inf') return Infinity;
  if (v === '-inf') return -Infinity;
  return Number(v);
}

/**
 * Every step's uniform (packed by the planner's `packParams`, so both executors agree on the
 * bytes) in one buffer, each at an `align`-byte offset: one upload, one buffer per program.
 * @param {PlanStep[]} steps @param {number} align
 * @param {(params: Array<[string, number]>) => Uint8Array} packOne
 */
export function packUniforms(steps, align, packOne) {
  const each = steps.map((s) => packOne(s.params || []));
  const offsets = [];
  let total = 0;
  for (const bytes of each) {
    offsets.push(total);
    total += Math.ceil(bytes.byteLength / align) * align;
  }
  const bytes = new Uint8Array(total);
  each.forEach((b, i) => bytes.set(b, offsets[i]));
  return { bytes, offsets, sizes: each.map((b) => b.byteLength) };
}
