// The protocol-v4 selection ops on wasm (kernels/wasm/src/index.rs): rank-4 walks over 32-bit
// words (float32 and int32 data), planned once. An index op first checks its indices in wasm
// memory, before anything is written: out of range is BACKEND naming the node, the position
// and the value (values.mjs, the words of every CPU lane). index_add and scatter_add copy a,
// then add the sources in row-major order: the protocol's fixed order.
import { numel, stridesOf } from '../../shapes.mjs';
import { indexAxisOf, indexError } from '../../values.mjs';
import { registerKernel } from './registry.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };

/** Left-padded to rank 4. @param {number[]} v @param {number} fill */
const pad4 = (v, fill) => [...new Array(4 - v.length).fill(fill), ...v];

/** The Walk descriptor: [axis, base, d[4], s[4], t[4]] (index.rs). */
function walk(domain, { axis = 0, base = 0, s = [], t = [] } = {}) {
  const rank = domain.length;
  const vec = (/** @type {number[]} */ v) => pad4(v.length ? v : new Array(rank).fill(0), 0);
  return [axis + 4 - rank, base, ...pad4(domain, 1), ...vec(s), ...vec(t)];
}

/** The start offset and per-axis strides of a normalized slice of `shape`. */
function sliceWalk(shape, slices) {
  const st = stridesOf(shape);
  return { base: slices.reduce((acc, [start], k) => acc + start * st[k], 0),
    s: slices.map(([, , step], k) => step * st[k]) };
}

/**
 * Throws BACKEND for the first index outside 0..n-1 of operand 1 (idx) at pointer `at`; n is
 * a's extent along the op's axis (its rows for dequantize_rows).
 */
export function checker(ctx) {
  const { node, exports, shape } = ctx;
  const count = numel(shape(1));
  const n = shape(0)[indexAxisOf(node)];
  return (/** @type {number} */ at) => {
    const idx = new Int32Array(exports.memory.buffer, at, count);
    for (let p = 0; p < count; p++) {
      if (idx[p] < 0 || idx[p] >= n) throw indexError('BACKEND', node, shape(0), p, idx[p]);
    }
  };
}

registerKernel('slice', ({ exports, node, operand, shape, out, desc }) => {
  const a = operand(0);
  const w = desc(walk(node.shape, sliceWalk(shape(0), node.attrs.slices)));
  return (p) => exports.walk_read(p[a], p[out], w);
}, DTYPES);

registerKernel('slice_scatter', ({ exports, node, operand, shape, out, desc }) => {
  const [a, src, n] = [operand(0), operand(1), numel(node.shape)];
  const w = desc(walk(shape(1), sliceWalk(node.shape, node.attrs.slices)));
  return (p) => {
    exports.copy(p[a], p[out], n);
    exports.walk_write(p[src], p[out], w);
  };
}, DTYPES);

registerKernel('concat', ({ exports, node, operand, shape, out, desc }) => {
  const st = stridesOf(node.shape);
  const { axis } = node.attrs;
  let start = 0;
  const parts = node.operands.map((_, k) => {
    const w = desc(walk(shape(k), { base: start * st[axis], s: st }));
    start += shape(k)[axis];
    return [operand(k), w];
  });
  return (p) => { for (const [slot, w] of parts) exports.walk_write(p[slot], p[out], w); };
}, DTYPES);

registerKernel('pad', ({ exports, node, operand, shape, out, desc, dtype }) => {
  const a = operand(0);
  const st = stridesOf(node.shape);
  const base = node.attrs.widths.reduce((acc, [before], k) => acc + before * st[k], 0);
  const w = desc(walk(shape(0), { base, s: st }));
  const bits = dtype(0) === 'float32'
    ? new Uint32Array(new Float32Array([node.attrs.value]).buffer)[0] : node.attrs.value >>> 0;
  const n = numel(node.shape);
  return (p) => {
    exports.fill(p[out], n, bits);
    exports.walk_write(p[a], p[out], w);
  };
}, DTYPES);

for (const op of ['index_select', 'gather']) {
  registerKernel(op, (ctx) => {
    const { exports, node, operand, shape, out, desc } = ctx;
    const [a, idx] = [operand(0), operand(1)];
    const { axis } = node.attrs;
    const t = op === 'gather' ? stridesOf(node.shape) : node.shape.map((_, k) => (k === axis ? 1 : 0));
    const w = desc(walk(node.shape, { axis, s: stridesOf(shape(0)), t }));
    const check = checker(ctx);
    return (p) => {
      check(p[idx]);
      exports.walk_gather(p[a], p[idx], p[out], w);
    };
  }, DTYPES);
}

for (const op of ['index_add', 'scatter_add']) {
  registerKernel(op, (ctx) => {
    const { exports, node, operand, shape, out, desc, dtype } = ctx;
    const [a, idx, src, n] = [operand(0), operand(1), operand(2), numel(node.shape)];
    const { axis } = node.attrs;
    const srcShape = shape(2);
    const t = op === 'scatter_add' ? stridesOf(srcShape) : srcShape.map((_, k) => (k === axis ? 1 : 0));
    const w = desc(walk(srcShape, { axis, s: stridesOf(node.shape), t }));
    const add = dtype(0) === 'float32' ? exports.walk_add_f32 : exports.walk_add_i32;
    const check = checker(ctx);
    return (p) => {
      check(p[idx]);
      exports.copy(p[a], p[out], n);
      add(p[src], p[idx], p[out], w);
    };
  }, DTYPES);
}
