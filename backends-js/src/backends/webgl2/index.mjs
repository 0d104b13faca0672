// The protocol-v4 selection ops on WebGL2: one shader, index.glsl, output-centric, on the
// 32-bit words of R32F (float32) or R32I (int32) textures. A fragment shader has no atomics,
// so an index op adds a check pass: one fragment per row of idx's texture writes the smallest
// position of an index out of range (or 0xffffffff) into a check texture (k.check) that the
// program reads back after every step and turns into BACKEND. Indices are int32 (R32I), so
// every int32 index is representable; tensors are limited by the texture size (textures.mjs:
// LIMIT past MAX_TEXTURE_SIZE^2 elements).
import { pad4, registerKernel, stridesOf } from './registry.mjs';

/** Padded rank-4 strides of `shape` (0 on the padding). @param {number[]} shape */
const strides4 = (shape) => [...new Array(4 - shape.length).fill(0), ...stridesOf(shape)];

/**
 * The check pass of an index op (or dequantize_rows): its idx's positions out of 0..size-1,
 * one word per texel row. size: a's extent along the op's axis unless given.
 */
export function checkPass(node, k, size = k.shape(node.operands[0])[node.attrs.axis]) {
  const idx = node.operands[1];
  const count = k.shape(idx).reduce((a, b) => a * b, 1);
  const width = Math.min(count, k.maxTextureSize);
  const rows = Math.ceil(count / width);
  const target = k.check(rows);
  return { shader: 'index.glsl', defines: { WORDS_OUT: 1, IDX_OP: 5, A_INT: 1, OUT_UINT: 1 },
    inputs: { u_a: k.slot(idx), u_idx: k.slot(idx) },
    uniforms: { u_size: ['i', size], u_icount: ['i', count] },
    target };
}

const DTYPES = { dtypes: ['float32', 'int32'] };

/** The defines of a pass over `dtype` words. @param {string} dtype @param {number} op */
function defines(dtype, op) {
  return { WORDS_OUT: 1, IDX_OP: op, ...(dtype === 'int32' ? { A_INT: 1, OUT_INT: 1 } : {}) };
}

/** Padded rank-4 [start, step] vectors of normalized slices. */
function sliceVectors(slices) {
  const pad = 4 - slices.length;
  return {
    start: [...new Array(pad).fill(0), ...slices.map((e) => e[0])],
    step: [...new Array(pad).fill(1), ...slices.map((e) => e[2])],
  };
}

registerKernel('slice', (node, k) => {
  const a = node.operands[0];
  const st = stridesOf(k.shape(a));
  const { slices } = node.attrs;
  const base = slices.reduce((acc, [start], d) => acc + start * st[d], 0);
  const sa = [...new Array(4 - st.length).fill(0), ...slices.map(([, , step], d) => step * st[d])];
  return [{ shader: 'index.glsl', defines: defines(node.dtype, 0), inputs: { u_a: k.slot(a) },
    uniforms: { u_shape: ['i4', pad4(node.shape)], u_sa: ['i4', sa], u_base: ['i', base] },
    target: k.out }];
}, DTYPES);

registerKernel('slice_scatter', (node, k) => {
  const [a, src] = node.operands;
  const { start, step } = sliceVectors(node.attrs.slices);
  return [{ shader: 'index.glsl', defines: defines(node.dtype, 1),
    inputs: { u_a: k.slot(a), u_src: k.slot(src) },
    uniforms: { u_shape: ['i4', pad4(node.shape)], u_start: ['i4', start], u_step: ['i4', step],
      u_count: ['i4', pad4(k.shape(src))] }, target: k.out }];
}, DTYPES);

registerKernel('concat', (node, k) => {
  const axis = node.attrs.axis;
  const ends = [];
  let end = 0;
  for (const id of node.operands) ends.push(end += k.shape(id)[axis]);
  while (ends.length < 8) ends.push(end);
  /** @type {Record<string, number>} */
  const inputs = {};
  node.operands.forEach((id, i) => { inputs[i === 0 ? 'u_a' : `u_t${i}`] = k.slot(id); });
  return [{ shader: 'index.glsl', defines: { ...defines(node.dtype, 2), NT: node.operands.length },
    inputs, uniforms: { u_shape: ['i4', pad4(node.shape)], u_axis: ['i', axis + 4 - node.shape.length],
      u_ends0: ['i4', ends.slice(0, 4)], u_ends1: ['i4', ends.slice(4, 8)] }, target: k.out }];
}, DTYPES);

registerKernel('pad', (node, k) => {
  const a = node.operands[0];
  const before = node.attrs.widths.map((w) => w[0]);
  const value = node.dtype === 'float32'
    ? new Uint32Array(new Float32Array([node.attrs.value]).buffer)[0] : node.attrs.value >>> 0;
  return [{ shader: 'index.glsl', defines: defines(node.dtype, 3), inputs: { u_a: k.slot(a) },
    uniforms: { u_shape: ['i4', pad4(node.shape)], u_start: ['i4', [...new Array(4 - before.length).fill(0), ...before]],
      u_count: ['i4', pad4(k.shape(a))], u_value: ['u', value] }, target: k.out }];
}, DTYPES);

for (const op of ['index_select', 'gather']) {
  registerKernel(op, (node, k) => {
    const [a, idx] = node.operands;
    const rank = node.shape.length;
    const axis = node.attrs.axis;
    const t = op === 'gather' ? strides4(node.shape)
      : [...new Array(4 - rank).fill(0), ...node.shape.map((_, d) => (d === axis ? 1 : 0))];
    return [checkPass(node, k), { shader: 'index.glsl', defines: defines(node.dtype, 4),
      inputs: { u_a: k.slot(a), u_idx: k.slot(idx) },
      uniforms: { u_shape: ['i4', pad4(node.shape)], u_sa: ['i4', strides4(k.shape(a))],
        u_t: ['i4', t], u_axis: ['i', axis + 4 - rank], u_size: ['i', k.shape(a)[axis]] },
      target: k.out }];
  }, DTYPES);
}

for (const op of ['index_add', 'scatter_add']) {
  registerKernel(op, (node, k) => {
    const [a, idx, src] = node.operands;
    const rank = node.shape.length;
    const axis = node.attrs.axis;
    const idxShape = k.shape(idx);
    const flat = op === 'index_add';
    const t = flat ? [...new Array(4 - rank).fill(0), ...node.shape.map((_, d) => (d === axis ? 1 : 0))]
      : strides4(idxShape);
    const lim = flat ? node.shape.map((d, j) => (j === axis ? idxShape[0] : d)) : idxShape;
    return [checkPass(node, k), { shader: 'index.glsl', defines: defines(node.dtype, 6),
      inputs: { u_a: k.slot(a), u_idx: k.slot(idx), u_src: k.slot(src) },
      uniforms: { u_shape: ['i4', pad4(node.shape)], u_t: ['i4', t], u_u: ['i4', strides4(k.shape(src))],
        u_lim: ['i4', pad4(lim)], u_axis: ['i', axis + 4 - rank], u_size: ['i', node.shape[axis]],
        u_m: ['i', flat ? idxShape[0] : idxShape[axis]] },
      target: k.out }];
  }, DTYPES);
}
