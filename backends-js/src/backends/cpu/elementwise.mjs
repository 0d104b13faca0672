// Elementwise loops. Storing a float64 result into a Float32Array rounds it once to float32;
// for one + - * / or sqrt of float32 operands that is exactly the float32 operation (float64
// has more than 2*24+2 bits), so these loops are faithful float32 arithmetic (an Int32Array
// store wraps modulo 2^32). The kernels themselves are in maps.mjs, generated from the kernel
// table's `js` expressions (make gen).
import { stridesOf } from '../../shapes.mjs';

/**
 * Strides of an operand seen from the output's index space: 0 along broadcast axes.
 * @param {number[]} shape @param {number} rank
 */
export function broadcastStrides(shape, rank) {
  const own = stridesOf(shape);
  const out = new Int32Array(rank);
  for (let i = 0; i < shape.length; i++) {
    out[rank - shape.length + i] = shape[i] === 1 ? 0 : own[i];
  }
  return out;
}

/**
 * out[i] = f(a[ia], b[ib]) with NumPy broadcasting; one odometer walk, no allocation per element.
 * @param {(x: number, y: number) => number} f
 */
export function binary(f) {
  return (out, [a, b], node, [sa, sb]) => {
    const n = out.length;
    if (a.length === n && b.length === n) {
      for (let i = 0; i < n; i++) out[i] = f(a[i], b[i]);
      return;
    }
    if (b.length === 1 && a.length === n) {
      const y = b[0];
      for (let i = 0; i < n; i++) out[i] = f(a[i], y);
      return;
    }
    if (a.length === 1 && b.length === n) {
      const x = a[0];
      for (let i = 0; i < n; i++) out[i] = f(x, b[i]);
      return;
    }
    const shape = node.shape;
    const rank = shape.length;
    const ta = broadcastStrides(sa, rank);
    const tb = broadcastStrides(sb, rank);
    const idx = new Int32Array(rank);
    let ia = 0;
    let ib = 0;
    for (let i = 0; i < n; i++) {
      out[i] = f(a[ia], b[ib]);
      for (let d = rank - 1; d >= 0; d--) {
        idx[d]++;
        ia += ta[d];
        ib += tb[d];
        if (idx[d] < shape[d]) break;
        ia -= ta[d] * shape[d];
        ib -= tb[d] * shape[d];
        idx[d] = 0;
      }
    }
  };
}

/** out[i] = f(a[i]). @param {(x: number) => number} f */
export function unary(f) {
  return (out, [a]) => {
    for (let i = 0; i < out.length; i++) out[i] = f(a[i]);
  };
}

/**
 * A binary op reading one float attribute as its third argument (the kernel table's `scalar`).
 * @param {string} attr @param {(x: number, y: number, s: number) => number} f
 */
export function scalarBinary(attr, f) {
  return (out, ins, node, shapes) => {
    const s = node.attrs[attr];
    binary((x, y) => f(x, y, s))(out, ins, node, shapes);
  };
}

/**
 * One kernel per dtype, chosen by the node's dtype.
 * @param {Record<string, (out: any, ins: any[], node: any, shapes: number[][]) => void>} kernels
 */
export function byDtype(kernels) {
  return (out, ins, node, shapes) => kernels[node.dtype ?? 'float32'](out, ins, node, shapes);
}

/**
 * out[i] = f(a[ia], b[ib], c[ic]) with the three operands broadcast together (where).
 * @param {(x: number, y: number, z: number) => number} f
 */
export function ternary(f) {
  return (out, [a, b, c], node, shapes) => {
    const shape = node.shape;
    const rank = shape.length;
    const [ta, tb, tc] = shapes.map((s) => broadcastStrides(s, rank));
    const idx = new Int32Array(rank);
    let ia = 0;
    let ib = 0;
    let ic = 0;
    for (let i = 0; i < out.length; i++) {
      out[i] = f(a[ia], b[ib], c[ic]);
      for (let d = rank - 1; d >= 0; d--) {
        idx[d]++;
        ia += ta[d];
        ib += tb[d];
        ic += tc[d];
        if (idx[d] < shape[d]) break;
        ia -= ta[d] * shape[d];
        ib -= tb[d] * shape[d];
        ic -= tc[d] * shape[d];
        idx[d] = 0;
      }
    }
  };
}
