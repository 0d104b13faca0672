// The protocol-v3 select ops (maximum, minimum, eq..ge, where, cast, hash_uniform, dropout) on
// the tensors' 32-bit words: one export, select (kernels/wasm/src/select.rs), given the op's
// code (the OP codes of select.wgsl), the operands' dtype code, a rank-4 walk descriptor and
// the hash/dropout/cast words, all made once at prepare.
import { DTYPE_NAMES } from '../../dtypes.mjs';
import { stridesOf } from '../../shapes.mjs';
import { dropoutWords } from '../../hash-uniform.mjs';
import { registerKernel } from './registry.mjs';

const SELECT_OP = { maximum: 0, minimum: 1, eq: 2, ne: 3, lt: 4, le: 5, gt: 6, ge: 7, where: 8,
  cast: 9, hash_uniform: 10, dropout: 11 };
const DTYPE_CODE = { float32: 0, int32: 1, uint32: 2, bool: 3 };
const FLAT = new Set(['cast', 'dropout']);  // a of the result's shape, no broadcasting

/** Strides of an operand read at the result's rank-4 coordinates: 0 where it broadcasts. */
function strides4(/** @type {number[]} */ shape, /** @type {number} */ rank) {
  const full = [...new Array(rank - shape.length).fill(1), ...shape];
  const own = stridesOf(full).map((s, i) => (full[i] === 1 ? 0 : s));
  return [...new Array(4 - rank).fill(0), ...own];
}

function walkWords(/** @type {import('./registry.mjs').PlanContext} */ ctx) {
  const { node, shape } = ctx;
  const rank = node.shape.length;
  const d = [...new Array(4 - rank).fill(1), ...node.shape];
  const zero = [0, 0, 0, 0];
  const count = node.operands.length;
  const of = (/** @type {number} */ i) => {
    if (node.op === 'hash_uniform' || i >= count) return zero;
    if (FLAT.has(node.op)) return i === 0 ? strides4(node.shape, rank) : zero;
    return strides4(shape(i), rank);
  };
  return [...d, ...of(0), ...of(1), ...of(2)];
}

for (const [op, code] of Object.entries(SELECT_OP)) {
  registerKernel(op, (ctx) => {
    const { exports, node, operand, out, desc } = ctx;
    const slots = node.operands.map((_, i) => operand(i));
    const [a, b, c] = [slots[0], slots[1] ?? slots[0], slots[2] ?? slots[0]];
    const dt = DTYPE_CODE[ctx.dtype(0)];
    const { threshold, scaleBits } = op === 'dropout' ? dropoutWords(node.attrs.p)
      : { threshold: 0, scaleBits: 0 };
    const to = op === 'cast' ? DTYPE_CODE[node.attrs.dtype] : 0;
    const walk = desc(walkWords(ctx));
    const words = desc([node.attrs.seed ?? 0, threshold, scaleBits, to]);
    return (p) => exports.select(code, dt, p[a], p[b], p[c], p[out], walk, words);
  }, { dtypes: DTYPE_NAMES });
}
