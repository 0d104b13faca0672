// The protocol-v4 selection ops on the CPU (slice, slice_scatter, index_select, gather,
// index_add, scatter_add, concat, pad), at float32 and int32: bits are copied, never
// converted; index_add / scatter_add add in the protocol's fixed order (ascending position
// in idx), each addition stored (so rounded to float32, or wrapped to int32) before the next.
// Indices are checked before anything is written: out of range is BACKEND naming the position.
import { registerKernel } from './registry.mjs';
import { stridesOf } from '../../shapes.mjs';
import { indexError } from '../../values.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };

/** Calls visit(flat, coords) for every element of `shape` in row-major order. */
function forEachIndex(shape, visit) {
  const rank = shape.length;
  const c = new Array(rank).fill(0);
  const count = shape.reduce((p, d) => p * d, 1);
  for (let i = 0; i < count; i++) {
    visit(i, c);
    for (let d = rank - 1; d >= 0; d--) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

/** Offset into a tensor of `strides` at coords c, axis `axis` replaced by j. */
function offsetWith(strides, c, axis, j) {
  let at = 0;
  for (let d = 0; d < strides.length; d++) at += (d === axis ? j : c[d]) * strides[d];
  return at;
}

/** The element offsets of a slice of a tensor `shape` (slices normalized by the validator). */
function sliceOffsets(shape, slices, outShape) {
  const strides = stridesOf(shape);
  const offsets = new Int32Array(outShape.reduce((p, d) => p * d, 1));
  forEachIndex(outShape, (i, c) => {
    let at = 0;
    for (let d = 0; d < c.length; d++) at += (slices[d][0] + c[d] * slices[d][2]) * strides[d];
    offsets[i] = at;
  });
  return offsets;
}

/** Refuse the first index outside 0..n-1 (BACKEND), before the kernel writes. */
function checkIndices(node, idx, aShape) {
  const n = aShape[node.attrs.axis];
  for (let p = 0; p < idx.length; p++) {
    if (idx[p] < 0 || idx[p] >= n) throw indexError('BACKEND', node, aShape, p, idx[p]);
  }
}

registerKernel('slice', (out, [a], node, [shape]) => {
  const offsets = sliceOffsets(shape, node.attrs.slices, node.shape);
  for (let i = 0; i < out.length; i++) out[i] = a[offsets[i]];
}, DTYPES);

registerKernel('slice_scatter', (out, [a, src], node, [shape, srcShape]) => {
  out.set(a);
  const offsets = sliceOffsets(shape, node.attrs.slices, srcShape);
  for (let i = 0; i < src.length; i++) out[offsets[i]] = src[i];
}, DTYPES);

registerKernel('index_select', (out, [a, idx], node, [shape]) => {
  checkIndices(node, idx, shape);
  const { axis } = node.attrs;
  const strides = stridesOf(shape);
  forEachIndex(node.shape, (i, c) => { out[i] = a[offsetWith(strides, c, axis, idx[c[axis]])]; });
}, DTYPES);

registerKernel('gather', (out, [a, idx], node, [shape]) => {
  checkIndices(node, idx, shape);
  const { axis } = node.attrs;
  const strides = stridesOf(shape);
  forEachIndex(node.shape, (i, c) => { out[i] = a[offsetWith(strides, c, axis, idx[i])]; });
}, DTYPES);

// For j = 0, 1, ...: out[.., idx[j], ..] += src[.., j, ..]. Walking src in row-major order
// visits, for each output element, its sources in ascending j: the protocol's order.
registerKernel('index_add', (out, [a, idx, src], node, [shape, , srcShape]) => {
  checkIndices(node, idx, shape);
  out.set(a);
  const { axis } = node.attrs;
  const strides = stridesOf(shape);
  forEachIndex(srcShape, (i, c) => {
    const at = offsetWith(strides, c, axis, idx[c[axis]]);
    out[at] += src[i];
  });
}, DTYPES);

// For p in row-major order of idx: out[p with axis replaced by idx[p]] += src[p].
registerKernel('scatter_add', (out, [a, idx, src], node, [shape, idxShape]) => {
  checkIndices(node, idx, shape);
  out.set(a);
  const { axis } = node.attrs;
  const strides = stridesOf(shape);
  forEachIndex(idxShape, (i, c) => {
    const at = offsetWith(strides, c, axis, idx[i]);
    out[at] += src[i];
  });
}, DTYPES);

registerKernel('concat', (out, ins, node, inShapes) => {
  const { axis } = node.attrs;
  const outStrides = stridesOf(node.shape);
  let start = 0;
  ins.forEach((t, k) => {
    forEachIndex(inShapes[k], (i, c) => { out[offsetWith(outStrides, c, axis, start + c[axis])] = t[i]; });
    start += inShapes[k][axis];
  });
}, DTYPES);

registerKernel('pad', (out, [a], node, [shape]) => {
  const { widths, value } = node.attrs;
  out.fill(value);
  const strides = stridesOf(node.shape);
  forEachIndex(shape, (i, c) => {
    let at = 0;
    for (let d = 0; d < c.length; d++) at += (c[d] + widths[d][0]) * strides[d];
    out[at] = a[i];
  });
}, DTYPES);
