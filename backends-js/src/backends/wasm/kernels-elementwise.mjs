// Elementwise kernels: unary maps, broadcast binary ops and the two-operand maps of the
// gelu gradient and the optimizers. Each forwards pointers and sizes to one kernels.wasm export.
import { numel } from '../../shapes.mjs';
import { registerKernel } from './registry.mjs';
import { dtypeSuffix, exprOf, familyOps, kernelTable, langDtypes } from '../../kernel-table.mjs';

// The map ops and their exports come from the kernel table: kernels/wasm/src/maps.rs is
// generated from its `rust` texts (make gen), one export per op and dtype (`abs`, `abs_i32`).
// How a map2 export is called follows from its form: simd(...) = NumPy broadcast with a Bcast
// descriptor; f64(...) = same-shape (a, b, out, n); hand-written with a `scalar` attribute =
// (a, b, out, n, attribute).
const exportOf = (/** @type {string} */ op, /** @type {any} */ node) =>
  op + dtypeSuffix(node.dtype);

for (const op of familyOps('map1')) {
  registerKernel(op, ({ exports, node, operand, out }) => {
    const fn = exports[exportOf(op, node)];
    const a = operand(0);
    const n = numel(node.shape);
    return (p) => fn(p[a], p[out], n);
  }, { dtypes: langDtypes(op, 'rust') });
}

/**
 * Dims and element strides of out, a and b for a NumPy broadcast, with size-1 axes dropped and
 * axes that are contiguous in both operands merged, left-padded to rank 4 (kernels.wasm's
 * `Bcast`: dims[4], sa[4], sb[4]).
 * @param {number[]} outShape @param {number[]} aShape @param {number[]} bShape
 */
export function broadcastDesc(outShape, aShape, bShape) {
  const strides = (/** @type {number[]} */ shape) => {
    const s = new Array(outShape.length).fill(0);
    let acc = 1;
    for (let i = 1; i <= shape.length; i++) {
      const d = shape[shape.length - i];
      s[outShape.length - i] = d === 1 ? 0 : acc;
      acc *= d;
    }
    return s;
  };
  const sa = strides(aShape);
  const sb = strides(bShape);
  /** @type {{d: number, a: number, b: number}[]} */
  const axes = [];
  outShape.forEach((d, i) => {
    if (d !== 1) axes.push({ d, a: sa[i], b: sb[i] });
  });
  /** @type {{d: number, a: number, b: number}[]} */
  const merged = [];
  for (const ax of axes) {
    const prev = merged[merged.length - 1];
    if (prev && prev.a === ax.a * ax.d && prev.b === ax.b * ax.d) {
      prev.d *= ax.d;
      prev.a = ax.a;
      prev.b = ax.b;
    } else {
      merged.push({ ...ax });
    }
  }
  while (merged.length < 4) merged.unshift({ d: 1, a: 0, b: 0 });
  return [...merged.map((x) => x.d), ...merged.map((x) => x.a), ...merged.map((x) => x.b)];
}

for (const op of familyOps('map2')) {
  const rust = /** @type {string} */ (exprOf(op, 'rust'));
  const { scalar } = kernelTable.ops[op];
  const dtypes = langDtypes(op, 'rust');
  if (rust.startsWith('simd(')) {
    registerKernel(op, ({ exports, node, operand, shape, out, desc }) => {
      const fn = exports[exportOf(op, node)];
      const [a, b] = [operand(0), operand(1)];
      const d = desc(broadcastDesc(node.shape, shape(0), shape(1)));
      return (p) => fn(p[a], p[b], p[out], d);
    }, { dtypes });
  } else {
    registerKernel(op, ({ exports, node, operand, out }) => {
      const fn = exports[exportOf(op, node)];
      const [a, b, n] = [operand(0), operand(1), numel(node.shape)];
      if (!scalar) return (p) => fn(p[a], p[b], p[out], n);
      const x = node.attrs[scalar];
      return (p) => fn(p[a], p[b], p[out], n, x);
    }, { dtypes });
  }
}

registerKernel('adam_update', ({ exports, node, operand, out }) => {
  const [a, b, c, t] = [0, 1, 2, 3].map(operand);
  const n = numel(node.shape);
  const { lr, beta1, beta2, eps } = node.attrs;
  return (p) => exports.adam_update(p[a], p[b], p[c], p[t], p[out], n, lr, beta1, beta2, eps);
});
