// Kernels that move elements without arithmetic (exact bits): transpose, permute, reshape,
// plus full (a constant, computed once per program) and life.
import { registerKernel, pad4, stridesOf } from './registry.mjs';
import { DTYPE_NAMES } from '../../dtypes.mjs';

/**
 * A strided copy: output axis i reads input axis dims[i].
 * @param {any} node @param {import('./registry.mjs').KernelContext} k @param {number[]} dims
 */
function permutePass(node, k, dims) {
  const a = node.operands[0];
  const inStrides = stridesOf(k.shape(a));
  const strides = dims.map((d) => inStrides[d]);
  return [{
    shader: 'strided.glsl', inputs: { u_a: k.slot(a) }, target: k.out,
    uniforms: {
      u_shape: ['i4', pad4(node.shape)],
      u_sa: ['i4', [...Array(4 - dims.length).fill(0), ...strides]],
    },
  }];
}

// Inputs are uploaded by the program (it never calls this build); the entry says which dtypes
// an input texture can hold (R32F for float32, R32I / R32UI for the others: textures.mjs), so
// supports() answers for input nodes like any other.
registerKernel('input', () => [], { dtypes: DTYPE_NAMES });

registerKernel('permute', (node, k) => permutePass(node, k, node.attrs.dims));

registerKernel('transpose', (node, k) => {
  const rank = node.shape.length;
  const dims = [...Array(rank).keys()];
  [dims[rank - 2], dims[rank - 1]] = [dims[rank - 1], dims[rank - 2]];
  return permutePass(node, k, dims);
});

// float32 by copy.glsl; int32 as index.glsl's word read (R32I textures: OUT_INT)
registerKernel('reshape', (node, k) => [node.dtype === 'int32' ? {
  shader: 'index.glsl', defines: { WORDS_OUT: 1, IDX_OP: 0, A_INT: 1, OUT_INT: 1 },
  inputs: { u_a: k.slot(node.operands[0]) }, target: k.out,
  uniforms: { u_shape: ['i4', [1, 1, 1, pad4(node.shape).reduce((a, b) => a * b, 1)]],
    u_sa: ['i4', [0, 0, 0, 1]], u_base: ['i', 0] },
} : { shader: 'copy.glsl', inputs: { u_a: k.slot(node.operands[0]) }, target: k.out }],
{ dtypes: ['float32', 'int32'] });

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

registerKernel('full', (node, k) => {
  f32[0] = node.attrs.value;  // the value arrives as a JS number (inf and NaN included)
  return [{ shader: 'full.glsl', uniforms: { u_bits: ['u', u32[0]] }, target: k.out }];
}, { constant: true });

registerKernel('life', (node, k) => [{
  shader: 'life.glsl', inputs: { u_a: k.slot(node.operands[0]) }, target: k.out,
  uniforms: { u_hw: ['i2', node.shape] },
}]);
