// Batched matmul with broadcast batch axes (rank <= 4, so at most two batch axes).
import { registerKernel, broadcastStrides, sizeOf } from './registry.mjs';

/**
 * Element strides of an operand's batch axes along the output's two (padded) batch axes.
 * @param {number[]} shape operand shape [..., R, C] @param {number[]} outBatch
 */
function batchStrides(shape, outBatch) {
  const batch = shape.slice(0, -2);
  const matrix = sizeOf(shape.slice(-2));
  const s = broadcastStrides(batch.length ? batch : [1], outBatch.length ? outBatch : [1]);
  return [s[2] * matrix, s[3] * matrix];
}

registerKernel('matmul', (node, k) => {
  const [a, b] = node.operands;
  const sa = k.shape(a);
  const out = node.shape;
  const outBatch = out.slice(0, -2);
  const b2 = [...Array(2 - outBatch.length).fill(1), ...outBatch];
  return [{
    shader: 'matmul.glsl', inputs: { u_a: k.slot(a), u_b: k.slot(b) }, target: k.out,
    uniforms: {
      u_shape: ['i4', [...b2, out[out.length - 2], out[out.length - 1]]],
      u_k: ['i', sa[sa.length - 1]],
      u_sa: ['i2', batchStrides(sa, outBatch)],
      u_sb: ['i2', batchStrides(k.shape(b), outBatch)],
    },
  }];
});
