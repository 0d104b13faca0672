// reduce_max / reduce_min / argmax / argmin (protocol v3) at float32 and int32.
// reduce_max/min are IEEE 754-2019 maximum/minimum: NaN propagates and -0 < +0, a total order,
// so the result does not depend on the order of the combines (every backend gives the same
// bits however it splits the work). argmax/argmin: the first NaN wins, else the first index of
// the extreme (-0 and +0 tie); the result is int32.
import { registerKernel } from './registry.mjs';
import { forEachLine } from './reduce.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };

/** IEEE maximum. @param {number} x @param {number} y */
function maximum(x, y) {
  if (x !== x || y !== y) return NaN;
  if (x !== y) return x > y ? x : y;
  return Object.is(x, -0) ? y : x; // equal: +0 over -0
}

/** IEEE minimum. @param {number} x @param {number} y */
function minimum(x, y) {
  if (x !== x || y !== y) return NaN;
  if (x !== y) return x < y ? x : y;
  return Object.is(x, -0) ? x : y; // equal: -0 over +0
}

/** Index (0..n-1) of the first NaN, else of the first extreme; `better(v, best)` is strict. */
function argLine(src, base, stride, n, better) {
  let best = src[base];
  let at = 0;
  if (best !== best) return 0;
  for (let i = 1; i < n; i++) {
    const v = src[base + i * stride];
    if (v !== v) return i;
    if (better(v, best)) {
      best = v;
      at = i;
    }
  }
  return at;
}

/** A kernel over every line of the reduced axis (axis null: the flattened tensor). */
function lineKernel(fold) {
  return (out, [a], node, [shape]) => {
    const { axis } = node.attrs;
    if (axis === null) {
      out[0] = fold(a, 0, 1, a.length);
      return;
    }
    forEachLine(shape, axis, (base, stride, n, line) => {
      out[line] = fold(a, base, stride, n);
    });
  };
}

/** @param {(x: number, y: number) => number} combine */
const foldWith = (combine) => (src, base, stride, n) => {
  let acc = src[base];
  for (let i = 1; i < n; i++) acc = combine(acc, src[base + i * stride]);
  return acc;
};

registerKernel('reduce_max', lineKernel(foldWith(maximum)), DTYPES);
registerKernel('reduce_min', lineKernel(foldWith(minimum)), DTYPES);
registerKernel('argmax', lineKernel((s, b, st, n) => argLine(s, b, st, n, (v, m) => v > m)), DTYPES);
registerKernel('argmin', lineKernel((s, b, st, n) => argLine(s, b, st, n, (v, m) => v < m)), DTYPES);
