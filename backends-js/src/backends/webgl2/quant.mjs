// Block-quantized weights on WebGL2 (kernels/glsl/quant.glsl): q4_k / q6_k / q8_0 / q4_0 bytes
// (an R32UI texture of words) decoded in the shader by dequantize, dequantize_rows and matmul_q
// (a @ b.T), and matmul_fixed's int32 fixed point with 64-bit sums as uint pairs. One output
// element per fragment.
import { registerKernel, sizeOf } from './registry.mjs';
import { checkPass } from './index.mjs';
import { BLOCK_DTYPES } from '../../dtypes.mjs';

/** quant.glsl's define of each kind (q4_k has none). */
const KIND_DEFINE = { q6_k: 'Q6K', q8_0: 'Q80', q4_0: 'Q40' };

/** @param {import('./registry.mjs').KernelContext} k @param {number} id */
const kindDefines = (k, id) => {
  const define = KIND_DEFINE[k.node(id).dtype];
  return define ? { [define]: 1 } : {};
};

registerKernel('dequantize', (node, k) => [{
  shader: 'quant.glsl', defines: { DEQUANT: 1, WORDS_OUT: 1, ...kindDefines(k, node.operands[0]) },
  inputs: { u_q: k.slot(node.operands[0]) }, uniforms: {}, target: k.out,
}], { dtypes: BLOCK_DTYPES });

// the index check pass of index.mjs (rows out of range: BACKEND after the step), then the rows
registerKernel('dequantize_rows', (node, k) => {
  const [a, idx] = node.operands;
  const [n, kk] = k.shape(a);
  return [checkPass(node, k, n), {
    shader: 'quant.glsl',
    defines: { DEQUANT_ROWS: 1, WORDS_OUT: 1, ...kindDefines(k, a) },
    inputs: { u_q: k.slot(a), u_idx: k.slot(idx) }, uniforms: { u_dims: ['i4', [n, kk, 0, 0]] },
    target: k.out,
  }];
}, { dtypes: BLOCK_DTYPES });

registerKernel('matmul_q', (node, k) => {
  const [a, b] = node.operands;
  const [n, kk] = k.shape(b);
  return [{
    shader: 'quant.glsl', defines: { MATMUL_Q: 1, ...kindDefines(k, b) },
    inputs: { u_a: k.slot(a), u_q: k.slot(b) }, uniforms: { u_dims: ['i4', [n, kk, 0, 0]] },
    target: k.out,
  }];
});

/**
 * Element strides of an operand's two batch axes (padded on the left to 2), 0 where it
 * broadcasts (the WebGPU planner's matrixBatchStrides).
 * @param {number[]} shape @param {number} batchRank
 */
function batchStrides(shape, batchRank) {
  const matrix = shape[shape.length - 2] * shape[shape.length - 1];
  const own = shape.slice(0, -2);
  const full = [...new Array(batchRank - own.length).fill(1), ...own];
  const strides = full.map((d, i) => (d === 1 ? 0 : sizeOf(full.slice(i + 1)) * matrix));
  return [...new Array(2 - full.length).fill(0), ...strides];
}

registerKernel('matmul_fixed', (node, k) => {
  const [a, b] = node.operands;
  const sa = k.shape(a);
  const sb = k.shape(b);
  const [m, kk] = sa.slice(-2);
  const n = sb[sb.length - 1];
  const batchShape = node.shape.slice(0, -2);
  const b1 = batchShape.length ? batchShape[batchShape.length - 1] : 1;
  const [as0, as1] = batchStrides(sa, batchShape.length);
  const [bs0, bs1] = batchStrides(sb, batchShape.length);
  return [{
    shader: 'quant.glsl', defines: { FIXED: 1, WORDS_OUT: 1 },
    inputs: { u_a: k.slot(a), u_b: k.slot(b) },
    uniforms: { u_dims: ['i4', [m, n, kk, node.attrs.frac_bits]],
      u_strides: ['i4', [b1, as0, as1, bs0]], u_bs1: ['i', bs1] },
    target: k.out,
  }];
});
