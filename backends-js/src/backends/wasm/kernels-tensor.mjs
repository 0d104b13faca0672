// Kernels with structure: matmul (batched, reading transposed operands in place), reductions,
// the softmax family, layout ops, life, and the data ops (input, full).
import { numel } from '../../shapes.mjs';
import { registerKernel } from './registry.mjs';
import { BLOCK_DTYPES, DTYPE_NAMES } from '../../dtypes.mjs';
import { checker } from './kernels-index.mjs';
import { clampWords, DTYPE_CODE } from '../../clamp-bounds.mjs';

/** Inputs are uploaded or fed by the program (as 32-bit words, any dtype): no per-step work. */
registerKernel('input', () => null, { dtypes: DTYPE_NAMES });

/** full is filled once at prepare (its bits, so NaN and -0 survive) and never changes. */
registerKernel('full', ({ exports, node, out }) => {
  const bits = new Uint32Array(new Float32Array([node.attrs.value]).buffer)[0];
  return { init: (p) => exports.fill(p[out], numel(node.shape), bits) };
});

/** Batch offsets of one operand for each output batch index (broadcast batch axes). */
function batchOffsets(/** @type {number[]} */ outBatch, view) {
  const rank = view.shape.length;
  const batch = view.shape.slice(0, rank - 2);
  const strides = view.strides.slice(0, rank - 2);
  const offsets = [];
  const count = numel(outBatch);
  for (let idx = 0; idx < count; idx++) {
    let rem = idx;
    let off = 0;
    for (let i = outBatch.length - 1; i >= 0; i--) {
      const coord = rem % outBatch[i];
      rem = Math.floor(rem / outBatch[i]);
      const j = i - (outBatch.length - batch.length);
      if (j >= 0 && batch[j] !== 1) off += coord * strides[j];
    }
    offsets.push(off * 4);
  }
  return offsets;
}

registerKernel('matmul', ({ exports, node, view, out, scratch }) => {
  const [va, vb] = [view(0), view(1)];
  const ra = va.shape.length;
  const rb = vb.shape.length;
  const [m, k, n] = [va.shape[ra - 2], va.shape[ra - 1], vb.shape[rb - 1]];
  const [saM, saK, sbK, sbN] = [va.strides[ra - 2], va.strides[ra - 1], vb.strides[rb - 2],
    vb.strides[rb - 1]];
  const outBatch = node.shape.slice(0, -2);
  const offA = batchOffsets(outBatch, va);
  const offB = batchOffsets(outBatch, vb);
  const mn4 = m * n * 4;
  scratch(exports.matmul_scratch(k, n)); // packed blocks of A and B
  const mm = exports.matmul;
  return (p, s) => {
    for (let i = 0; i < offA.length; i++) {
      mm(p[va.slot] + offA[i], p[vb.slot] + offB[i], p[out] + i * mn4, m, k, n, saM, saK, sbK, sbN, s);
    }
  };
});

/** [outer, n, inner] around `axis` (axis null: everything in one row). */
function around(/** @type {number[]} */ shape, /** @type {number|null} */ axis) {
  if (axis === null) return [1, numel(shape), 1];
  return [numel(shape.slice(0, axis)), shape[axis], numel(shape.slice(axis + 1))];
}

for (const op of ['sum', 'mean']) {
  registerKernel(op, ({ exports, node, operand, shape, out }) => {
    const a = operand(0);
    const [outer, n, inner] = around(shape(0), node.attrs.axis);
    const mean = op === 'mean' ? 1 : 0;
    return (p) => exports.reduce_sum(p[a], p[out], outer, n, inner, mean);
  });
}

for (const op of ['softmax', 'log_softmax']) {
  registerKernel(op, ({ exports, node, operand, shape, out }) => {
    const fn = exports[op];
    const a = operand(0);
    const [outer, n, inner] = around(shape(0), node.attrs.axis);
    return (p) => fn(p[a], p[out], outer, n, inner);
  });
}

for (const op of ['cross_entropy', 'cross_entropy_grad']) {
  registerKernel(op, ({ exports, operand, shape, out }) => {
    const fn = exports[op];
    const [a, b] = [operand(0), operand(1)];
    const [rows, cols] = shape(0);
    return (p) => fn(p[a], p[b], p[out], rows, cols);
  });
}

/**
 * A permute as kernels.wasm's `Perm`: output dims and, per output axis, the input stride,
 * left-padded to rank 4.
 * @param {number[]} inShape @param {number[]} dims
 */
export function permuteDesc(inShape, dims) {
  const inStrides = [];
  let acc = 1;
  for (let i = inShape.length - 1; i >= 0; i--) {
    inStrides[i] = acc;
    acc *= inShape[i];
  }
  const outDims = dims.map((d) => inShape[d]);
  const strides = dims.map((d) => inStrides[d]);
  while (outDims.length < 4) {
    outDims.unshift(1);
    strides.unshift(0);
  }
  return [...outDims, ...strides];
}

/** The axis order of `transpose` for a rank: the last two swapped. */
export function transposeDims(/** @type {number} */ rank) {
  const dims = [...Array(rank).keys()];
  [dims[rank - 2], dims[rank - 1]] = [dims[rank - 1], dims[rank - 2]];
  return dims;
}

for (const op of ['transpose', 'permute']) {
  registerKernel(op, ({ exports, node, operand, shape, out, desc }) => {
    const a = operand(0);
    const dims = op === 'permute' ? node.attrs.dims : transposeDims(shape(0).length);
    const d = desc(permuteDesc(shape(0), dims));
    return (p) => exports.permute(p[a], p[out], d);
  });
}

registerKernel('reshape', ({ exports, node, operand, out }) => {
  const [a, n] = [operand(0), numel(node.shape)];
  return (p) => exports.copy(p[a], p[out], n);  // words: float32 and int32 alike
}, { dtypes: ['float32', 'int32'] });

registerKernel('life', ({ exports, node, operand, out }) => {
  const a = operand(0);
  const [h, w] = node.shape;
  return (p) => exports.life(p[a], p[out], h, w);
});

// Protocol-v3 ops at float32 and int32, on the tensors' 32-bit words (kernels/wasm/src/extremes.rs).
const V3_DTYPES = { dtypes: ['float32', 'int32'] };
/** @param {import('./registry.mjs').PlanContext} ctx */
const operandDtype = (ctx) => ctx.dtype(0);

// (abs and square are generated map1 ops: kernels-elementwise.mjs, maps.rs)
registerKernel('clamp', (ctx) => {
  const { exports, node, operand, out } = ctx;
  const dtype = operandDtype(ctx);
  const [lo, hi] = clampWords(node.attrs, dtype);
  const [a, n, dt] = [operand(0), numel(node.shape), DTYPE_CODE[dtype]];
  return (p) => exports.bits_clamp(p[a], p[out], n, dt, lo, hi);
}, V3_DTYPES);

const EXTREMES_OP = { reduce_max: 0, reduce_min: 1, argmax: 2, argmin: 3 };
for (const [op, code] of Object.entries(EXTREMES_OP)) {
  registerKernel(op, (ctx) => {
    const { exports, node, operand, shape, out } = ctx;
    const a = operand(0);
    const [outer, n, inner] = around(shape(0), node.attrs.axis);
    const dt = DTYPE_CODE[operandDtype(ctx)];
    return (p) => exports.extremes(p[a], p[out], outer, n, inner, dt, code);
  }, V3_DTYPES);
}

// Block-quantized weights (kernels/wasm/src/quant.rs): q4_k / q6_k / q8_0 / q4_0 bytes decoded
// in the kernel; matmul_fixed.
const QUANT_KIND = { q4_k: 0, q6_k: 1, q8_0: 2, q4_0: 3 };
/** @param {import('./registry.mjs').PlanContext} ctx @param {number} i */
const quantKind = (ctx, i) => QUANT_KIND[ctx.dtype(i)];

registerKernel('dequantize', (ctx) => {
  const { exports, node, operand, out } = ctx;
  const [a, n, kind] = [operand(0), numel(node.shape), quantKind(ctx, 0)];
  return (p) => exports.dequantize(p[a], p[out], n, kind);
}, { dtypes: BLOCK_DTYPES });

// rows idx of a [N, K]: the indices checked first (BACKEND naming the first bad one)
registerKernel('dequantize_rows', (ctx) => {
  const { exports, node, operand, shape, out } = ctx;
  const [a, idx, kind] = [operand(0), operand(1), quantKind(ctx, 0)];
  const [m, k] = node.shape;
  const check = checker(ctx);
  return (p) => {
    check(p[idx]);
    exports.dequantize_rows(p[a], p[idx], p[out], m, k, kind);
  };
}, { dtypes: BLOCK_DTYPES });

registerKernel('matmul_q', (ctx) => {
  const { exports, node, operand, shape, out, scratch } = ctx;
  const [n, k] = shape(1);
  const rows = numel(node.shape) / n;
  const [x, w, kind] = [operand(0), operand(1), quantKind(ctx, 1)];
  scratch(k); // one decoded weight row
  return (p, s) => exports.matmul_q(p[x], p[w], p[out], rows, n, k, kind, s);
});

registerKernel('matmul_fixed', ({ exports, node, view, out }) => {
  const [va, vb] = [view(0), view(1)];
  const [m, k] = va.shape.slice(-2);
  const n = vb.shape[vb.shape.length - 1];
  const outBatch = node.shape.slice(0, -2);
  const offA = batchOffsets(outBatch, va);
  const offB = batchOffsets(outBatch, vb);
  const frac = node.attrs.frac_bits;
  return (p) => {
    for (let i = 0; i < offA.length; i++) {
      exports.matmul_fixed(p[va.slot] + offA[i], p[vb.slot] + offB[i], p[out] + i * m * n * 4,
        m, k, n, frac);
    }
  };
});
