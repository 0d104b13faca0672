// Validation step 7, "Values" (docs/protocol.md): what a graph's data says about its v4 ops,
// checked once shapes and dtypes are known. An index operand (`idx`) that is an input with
// data must hold indices in 0..a.shape[axis]-1 (fed or computed indices are checked by the
// kernels at run time: BACKEND); pad's value must be one of the data's dtype. Twin:
// pylib/gpulab/values.py, message for message.
import { nodeError } from './errors.mjs';
import { opSpec } from './optable.mjs';

/** @param {number[]} shape */
const fmt = (shape) => `[${shape.join(', ')}]`;

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * The axis an op's idx picks along: its `axis` attribute, 0 for dequantize_rows (rows).
 * @param {{attrs: Record<string, any>}} node
 */
export const indexAxisOf = (node) => node.attrs.axis ?? 0;

/**
 * The indices an axis takes: its size (a rank-0 a, indexed along axis 0 as PyTorch does: 1).
 * @param {number[]} a @param {number} axis
 */
export const axisExtent = (a, axis) => (a.length === 0 ? 1 : a[axis]);

/**
 * The out-of-range message, at validation (VALIDATION) and from kernels at run time (BACKEND:
 * every backend says it so; a GPU reports the position, `value` undefined, as its kernels
 * clamp the read and record only where).
 * @param {string} code @param {{id: number, op: string, attrs: Record<string, any>}} node
 * @param {number[]} a operand a's shape @param {number} p @param {number} [value]
 */
export function indexError(code, node, a, p, value) {
  const axis = indexAxisOf(node);
  const n = axisExtent(a, axis);
  const held = value === undefined ? `an index at idx[${p}] out of range` : `idx[${p}] = ${value}, out of range`;
  return nodeError(code, node, `operand idx holds ${held} for axis ${axis} of a ` +
    `${fmt(a)} (valid 0..${n - 1})`);
}

/**
 * @param {import('./validate.mjs').CheckedNode} node
 * @param {Map<number, import('./validate.mjs').CheckedNode>} byId
 */
function checkIndexData(node, byId) {
  const slot = opSpec(node.op).operands.indexOf('idx');
  if (slot < 0) return;
  const idx = byId.get(node.operands[slot]);
  if (idx.op !== 'input' || !idx.data) return;
  const a = byId.get(node.operands[0]).shape;
  const n = axisExtent(a, indexAxisOf(node));
  const data = idx.data;
  for (let p = 0; p < data.length; p++) {
    if (data[p] < 0 || data[p] >= n) throw indexError('VALIDATION', node, a, p, data[p]);
  }
}

/** @param {import('./validate.mjs').CheckedNode} node */
function checkPadValue(node) {
  if (node.op !== 'pad' || node.dtype !== 'int32') return;
  const v = node.attrs.value;
  if (!Number.isInteger(v) || v < INT32_MIN || v > INT32_MAX) {
    throw nodeError('VALIDATION', node, `value ${v} is not an int32 (the data is int32)`);
  }
}

/**
 * Step 7 over every node in list order.
 * @param {import('./validate.mjs').CheckedNode[]} nodes
 * @param {Map<number, import('./validate.mjs').CheckedNode>} byId
 */
export function checkValues(nodes, byId) {
  for (const node of nodes) {
    checkIndexData(node, byId);
    checkPadValue(node);
  }
}
