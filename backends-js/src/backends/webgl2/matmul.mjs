// Batched matmul with broadcast batch axes (rank <= 4, so at most two batch axes), in three
// kinds of passes: a packed along K and b packed along N into RGBA32F scratch textures
// (pack.glsl), the product with 4 outputs per fragment (matmul.glsl), and the result unpacked
// into the output tensor (unpack.glsl). Reading 4 values per texel fetch is what makes it fast:
// texture fetches dominate a matmul on WebGL2 (docs/webgl2.md, "Speed").
import { registerKernel, broadcastStrides, sizeOf } from './registry.mjs';

/** Texels per packed row of `cols` values. @param {number} cols */
const texelsPerRow = (cols) => Math.ceil(cols / 4);

/**
 * Strides, in units of one matrix, of an operand's batch axes along the output's two (padded)
 * batch axes (0 where the operand broadcasts).
 * @param {number[]} shape operand shape [..., R, C] @param {number[]} outBatch
 */
function batchStrides(shape, outBatch) {
  const batch = shape.slice(0, -2);
  const s = broadcastStrides(batch.length ? batch : [1], outBatch.length ? outBatch : [1]);
  return [s[2], s[3]];
}

/**
 * The pass packing operand `id` (shape [..., rows, cols]) along its rows into a new scratch.
 * @param {import('./registry.mjs').KernelContext} k @param {number} id
 */
function packPass(k, id) {
  const shape = k.shape(id);
  const cols = shape[shape.length - 1];
  const rows = sizeOf(shape) / cols;
  const tpr = texelsPerRow(cols);
  return {
    shader: 'pack.glsl', defines: { PACKED_OUT: 1 }, inputs: { u_a: k.slot(id) },
    uniforms: { u_cols: ['i', cols], u_tpr: ['i', tpr], u_rows: ['i', rows] },
    target: k.temp4(rows * tpr),
  };
}

registerKernel('matmul', (node, k) => {
  const [a, b] = node.operands;
  const sa = k.shape(a);
  const sb = k.shape(b);
  const out = node.shape;
  const [M, N] = out.slice(-2);
  const K = sa[sa.length - 1];
  const outBatch = out.slice(0, -2);
  const b2 = [...Array(2 - outBatch.length).fill(1), ...outBatch];
  const tk = texelsPerRow(K);
  const tn = texelsPerRow(N);
  const packA = packPass(k, a);
  const packB = packPass(k, b);
  const product = k.temp4(sizeOf(b2) * M * tn);
  return [packA, packB, {
    shader: 'matmul.glsl', defines: { PACKED_OUT: 1 },
    inputs: { u_a: packA.target, u_b: packB.target }, target: product,
    uniforms: {
      u_shape: ['i4', [...b2, M, tn]],
      u_k: ['i', K],
      u_sa: ['i2', batchStrides(sa, outBatch).map((s) => s * M * tk)],
      u_sb: ['i2', batchStrides(sb, outBatch).map((s) => s * K * tn)],
    },
  }, {
    shader: 'unpack.glsl', inputs: { u_p: product }, target: k.out,
    uniforms: { u_cols: ['i', N], u_tpr: ['i', tn] },
  }];
});
