// Reductions in the protocol's fixed order (docs/protocol.md "Numerics"): 64 lanes, lane j
// adds elements j, j+64, ... from 0.0 in float32, then a tree s = 32..1. The same bits on every
// backend, so these loops must not be "optimized" into a different order.
import { registerKernel } from './registry.mjs';
import { REDUCE_LANES } from '../../optable.mjs';

const LANES = REDUCE_LANES;
// Float32Array storage rounds every partial sum to float32, as a GPU lane register would.
const lanes = new Float32Array(LANES);

/** Combine the lanes as a tree; returns lane 0. @param {(x: number, y: number) => number} op */
function tree(op) {
  for (let s = LANES >> 1; s >= 1; s >>= 1) {
    for (let i = 0; i < s; i++) lanes[i] = op(lanes[i], lanes[i + s]);
  }
  return lanes[0];
}

const plus = (x, y) => x + y;
// NaN never wins a comparison, so a NaN term is skipped by max; the following exp/sum of the
// softmax family still turns it into NaN.
const larger = (x, y) => (y > x ? y : x);

/** Sum of n values src[base + i*stride] in the protocol order (float32). */
export function orderedSum(src, base, stride, n) {
  lanes.fill(0);
  for (let i = 0; i < n; i++) lanes[i % LANES] += src[base + i * stride];
  return tree(plus);
}

/** Max of n values src[base + i*stride] in the protocol order. */
export function orderedMax(src, base, stride, n) {
  lanes.fill(-Infinity);
  for (let i = 0; i < n; i++) {
    const j = i % LANES;
    lanes[j] = larger(lanes[j], src[base + i * stride]);
  }
  return tree(larger);
}

/** Sum over i of exp(src[base + i*stride] - max), each term rounded to float32. */
function orderedExpSum(src, base, stride, n, max) {
  lanes.fill(0);
  for (let i = 0; i < n; i++) {
    lanes[i % LANES] += Math.fround(Math.exp(Math.fround(src[base + i * stride] - max)));
  }
  return tree(plus);
}

/**
 * Visit every 1-D line along `axis` of a tensor of `shape`: fn(base, stride, n).
 * @param {number[]} shape @param {number} axis
 * @param {(base: number, stride: number, n: number, line: number) => void} fn
 */
export function forEachLine(shape, axis, fn) {
  let outer = 1;
  let inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i];
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i];
  const n = shape[axis];
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < inner; k++) fn(o * n * inner + k, inner, n, o * inner + k);
  }
}

/**
 * A reduction of the kernel table (cpu/maps.mjs, generated): lanes of the output's typed array
 * (a Float32Array rounds every partial as a GPU lane register would; an Int32Array wraps) start
 * from the identity, lane j combines elements j, j+64, ... in order, then the tree; `finish`
 * turns the total and the reduced count into the result. For + at float32 the same bits as
 * orderedSum.
 * @param {(x: number, y: number) => number} combine
 * @param {Record<string, number>} identity per dtype
 * @param {(t: number, n: number) => number} finish
 */
export function tableReduce(combine, identity, finish) {
  return (out, [a], node, [shape]) => {
    const own = new /** @type {any} */ (out.constructor)(LANES);
    const start = identity[node.dtype ?? 'float32'];
    const reduceLine = (/** @type {number} */ base, /** @type {number} */ stride,
      /** @type {number} */ n) => {
      own.fill(start);
      for (let i = 0; i < n; i++) own[i % LANES] = combine(own[i % LANES], a[base + i * stride]);
      for (let s = LANES >> 1; s >= 1; s >>= 1) {
        for (let i = 0; i < s; i++) own[i] = combine(own[i], own[i + s]);
      }
      return finish(own[0], n);
    };
    const { axis } = node.attrs;
    if (axis === null) {
      out[0] = reduceLine(0, 1, a.length);
      return;
    }
    forEachLine(shape, axis, (base, stride, n, line) => {
      out[line] = reduceLine(base, stride, n);
    });
  };
}

registerKernel('softmax', (out, [a], node, [shape]) => {
  forEachLine(shape, node.attrs.axis, (base, stride, n) => {
    const max = orderedMax(a, base, stride, n);
    const sum = orderedExpSum(a, base, stride, n, max);
    for (let i = 0; i < n; i++) {
      const j = base + i * stride;
      out[j] = Math.fround(Math.exp(Math.fround(a[j] - max))) / sum;
    }
  });
});

registerKernel('log_softmax', (out, [a], node, [shape]) => {
  forEachLine(shape, node.attrs.axis, (base, stride, n) => {
    const max = orderedMax(a, base, stride, n);
    const logSum = Math.fround(Math.log(orderedExpSum(a, base, stride, n, max)));
    for (let i = 0; i < n; i++) {
      const j = base + i * stride;
      out[j] = Math.fround(a[j] - max) - logSum;
    }
  });
});

/** -sum_c b * log_softmax(a) for row r of [N, C] logits a and targets b. */
function crossEntropyRow(a, b, r, classes) {
  const base = r * classes;
  const max = orderedMax(a, base, 1, classes);
  const logSum = Math.fround(Math.log(orderedExpSum(a, base, 1, classes, max)));
  lanes.fill(0);
  for (let c = 0; c < classes; c++) {
    const logp = Math.fround(Math.fround(a[base + c] - max) - logSum);
    lanes[c % LANES] += Math.fround(b[base + c] * logp);
  }
  return -tree(plus);
}

registerKernel('cross_entropy', (out, [a, b], node, [[rows, classes]]) => {
  const perRow = new Float32Array(rows);
  for (let r = 0; r < rows; r++) perRow[r] = crossEntropyRow(a, b, r, classes);
  out[0] = orderedSum(perRow, 0, 1, rows) / Math.fround(rows);
});

registerKernel('cross_entropy_grad', (out, [a, b], node, [[rows, classes]]) => {
  for (let r = 0; r < rows; r++) {
    const base = r * classes;
    const max = orderedMax(a, base, 1, classes);
    const sum = orderedExpSum(a, base, 1, classes, max);
    for (let c = 0; c < classes; c++) {
      const p = Math.fround(Math.fround(Math.exp(Math.fround(a[base + c] - max))) / sum);
      out[base + c] = Math.fround(p - b[base + c]) / Math.fround(rows);
    }
  }
});
