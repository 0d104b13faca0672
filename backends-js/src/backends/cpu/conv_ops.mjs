// The protocol-v6 window ops on the CPU (conv2d, max_pool2d, avg_pool2d, resize), float32,
// in the protocol's order (docs/protocol.md "The v6 window ops"). conv2d is a direct
// convolution: each output's dot product over (c, kh, kw) ascending, every product and sum
// rounded to float32 (Math.fround), taps in the padding reading zeros, then + bias. (im2col
// would only copy the input kH x kW times here: JS has no BLAS to hand the matmul to;
// bench/archive/conv2d.py measures both.)
import { registerKernel } from './registry.mjs';
import { convOperands, windowParams, sourceFraction, nearestIndex, linearTaps } from '../../conv-geometry.mjs';

const f = Math.fround;

/**
 * conv2d, direct: out[n, m, oy, ox] = sum over (c, kh, kw) of w * a.
 * @param {Float32Array} out @param {Float32Array[]} ins
 */
export function conv2dDirect(out, ins, node, inShapes) {
  const { bias, a, w } = convOperands(ins);
  const p = windowParams(node, inShapes);
  const taps = p.cg * p.kh * p.kw;
  let o = 0;
  for (let n = 0; n < p.n; n++) {
    for (let m = 0; m < p.m; m++) {
      const c0 = Math.floor(m / p.mg) * p.cg; // the group's first input channel
      for (let oy = 0; oy < p.oh; oy++) {
        for (let ox = 0; ox < p.ow; ox++) {
          let acc = 0;
          for (let c = 0; c < p.cg; c++) {
            const plane = (n * p.c + c0 + c) * p.h;
            const wBase = m * taps + c * p.kh * p.kw;
            for (let i = 0; i < p.kh; i++) {
              const y = oy * p.sh - p.pt + i * p.dh;
              const row = (plane + y) * p.w;
              for (let j = 0; j < p.kw; j++) {
                const x = ox * p.sw - p.pl + j * p.dw;
                // a tap in the padding reads a zero (w * 0: NaN for an infinite w, as torch)
                const v = y >= 0 && y < p.h && x >= 0 && x < p.w ? a[row + x] : 0;
                acc = f(acc + f(w[wBase + i * p.kw + j] * v));
              }
            }
          }
          out[o++] = bias ? f(acc + bias[m]) : acc;
        }
      }
    }
  }
}

registerKernel('conv2d', conv2dDirect);

/** IEEE maximum (NaN propagates, -0 < +0), as reduce_max. */
function maximum(x, y) {
  if (x !== x || y !== y) return NaN;
  if (x !== y) return x > y ? x : y;
  return Object.is(x, -0) ? y : x;
}

/**
 * Calls visit(index of each tap inside a) for every window, then done(o, count along H,
 * count along W) for output element o; the counts are of the taps inside a, or (include) of
 * the taps inside the padded input.
 */
function eachWindow(node, inShapes, include, visit, done) {
  const p = windowParams(node, inShapes);
  const inside = (v, n, before, after) => (include ? v >= -before && v < n + after : v >= 0 && v < n);
  let o = 0;
  for (let plane = 0; plane < p.n * p.c; plane++) {
    for (let oy = 0; oy < p.oh; oy++) {
      for (let ox = 0; ox < p.ow; ox++) {
        let cy = 0;
        let cx = 0;
        for (let i = 0; i < p.kh; i++) cy += inside(oy * p.sh - p.pt + i * p.dh, p.h, p.pt, p.pb);
        for (let j = 0; j < p.kw; j++) cx += inside(ox * p.sw - p.pl + j * p.dw, p.w, p.pl, p.pr);
        for (let i = 0; i < p.kh; i++) {
          const y = oy * p.sh - p.pt + i * p.dh;
          if (y < 0 || y >= p.h) continue;
          for (let j = 0; j < p.kw; j++) {
            const x = ox * p.sw - p.pl + j * p.dw;
            if (x >= 0 && x < p.w) visit(((plane * p.h) + y) * p.w + x);
          }
        }
        done(o++, cy, cx);
      }
    }
  }
}

registerKernel('max_pool2d', (out, [a], node, inShapes) => {
  let best = -Infinity;
  eachWindow(node, inShapes, false, (at) => { best = maximum(best, a[at]); }, (o) => {
    out[o] = best;
    best = -Infinity;
  });
});

registerKernel('avg_pool2d', (out, [a], node, inShapes) => {
  let acc = 0;
  eachWindow(node, inShapes, node.attrs.count_include_pad, (at) => { acc = f(acc + a[at]); },
    (o, cy, cx) => {
      out[o] = f(acc / (cy * cx));
      acc = 0;
    });
});

/** Per output index along one axis: the source index (nearest) or two and their weights. */
function axisTaps(attrs, inSize, outSize) {
  const mode = attrs.coordinate_transformation_mode;
  return Array.from({ length: outSize }, (_, x) => {
    const [num, den] = sourceFraction(mode, x, inSize, outSize);
    return attrs.mode === 'nearest'
      ? { i0: nearestIndex(num, den, attrs.nearest_mode, inSize), i1: 0, w0: 1, w1: 0 }
      : linearTaps(num, den, inSize);
  });
}

registerKernel('resize', (out, [a], node, [shape]) => {
  const [n, c, h, w] = shape;
  const [oh, ow] = node.attrs.size;
  const ys = axisTaps(node.attrs, h, oh);
  const xs = axisTaps(node.attrs, w, ow);
  const nearest = node.attrs.mode === 'nearest';
  let o = 0;
  for (let plane = 0; plane < n * c; plane++) {
    const base = plane * h * w;
    for (const ty of ys) {
      for (const tx of xs) {
        if (nearest) {
          out[o++] = a[base + ty.i0 * w + tx.i0];
          continue;
        }
        // along W first, then H: the protocol's order
        const row = (y) => f(f(tx.w0 * a[base + y * w + tx.i0]) + f(tx.w1 * a[base + y * w + tx.i1]));
        out[o++] = f(f(ty.w0 * row(ty.i0)) + f(ty.w1 * row(ty.i1)));
      }
    }
  }
});
