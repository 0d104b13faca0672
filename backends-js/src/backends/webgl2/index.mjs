// The protocol-v4 selection ops without indices on WebGL2 (slice, slice_scatter, concat, pad):
// one shader, index.glsl, output-centric, on the 32-bit words of R32F (float32) or R32I
// (int32) textures. index_select, gather, index_add and scatter_add have no WebGL2 kernel yet:
// a fragment shader has no atomics to record an index out of range, so their run-time check
// needs a reduction pass the program reads back (e2e/conformance/lanes.json says so).
import { pad4, registerKernel, stridesOf } from './registry.mjs';

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
