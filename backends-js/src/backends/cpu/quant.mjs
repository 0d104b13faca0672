// Block-quantized weights on the JS CPU backend: ggml's q4_k / q6_k / q8_0 / q4_0 blocks
// decoded as ggml decodes them (dequantize, dequantize_rows, and inside matmul_q: a @ b.T), and
// matmul_fixed (fixed-point operands, 64-bit integer sums). docs/protocol.md "Block-quantized
// weights" and "matmul_fixed" give the rules; pylib/gpulab/quant.py is the numpy twin,
// kernels/wgsl/quant.wgsl the GPU one.
import { registerKernel } from './registry.mjs';
import { batchIndex } from './layout.mjs';
import { indexError } from '../../values.mjs';

export const BLOCK_BYTES = { q4_k: 144, q6_k: 210, q8_0: 34, q4_0: 18 };
export const BLOCK_VALUES = { q4_k: 256, q6_k: 256, q8_0: 32, q4_0: 32 };
const QUANT_DTYPES = Object.keys(BLOCK_BYTES);

/** An IEEE binary16 as a number (exact; subnormals and -0 kept). @param {number} h */
export function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 31;
  const m = h & 1023;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

/** Scale and min j (0..7) of a q4_k block's 12 packed bytes (ggml's get_scale_min_k4). */
function scaleMin(q, at, j) {
  if (j < 4) return [q[at + j] & 63, q[at + j + 4] & 63];
  return [(q[at + j + 4] & 0xf) | ((q[at + j - 4] >> 6) << 4),
    (q[at + j + 4] >> 4) | ((q[at + j] >> 6) << 4)];
}

/**
 * Decode block `blk` of q4_k bytes into out[o .. o+256): y = f32(d * sc) * q - f32(dmin * m)
 * (every product is exact in float32, so only the subtraction rounds: Math.fround once).
 */
function decodeQ4k(bytes, blk, out, o) {
  const at = blk * 144;
  const d = halfToFloat(bytes[at] | (bytes[at + 1] << 8));
  const dmin = halfToFloat(bytes[at + 2] | (bytes[at + 3] << 8));
  for (let j = 0; j < 8; j++) {
    const [sc, m] = scaleMin(bytes, at + 4, j);
    const d1 = d * sc;
    const m1 = dmin * m;
    const qs = at + 16 + (j >> 1) * 32;
    const shift = (j & 1) * 4;
    for (let l = 0; l < 32; l++) out[o + j * 32 + l] = Math.fround(d1 * ((bytes[qs + l] >> shift) & 15) - m1);
  }
}

/** Decode block `blk` of q6_k bytes: y = d * scale * (q - 32), exact (all products fit). */
function decodeQ6k(bytes, blk, out, o) {
  const at = blk * 210;
  const d = halfToFloat(bytes[at + 208] | (bytes[at + 209] << 8));
  for (let i = 0; i < 256; i++) {
    const h = i >> 7;
    const t = (i >> 5) & 3;
    const l = i & 31;
    const ql = bytes[at + h * 64 + l + (t & 1) * 32];
    const qh = bytes[at + 128 + h * 32 + l];
    const q = (((t < 2 ? ql : ql >> 4) & 15) | (((qh >> (2 * t)) & 3) << 4)) - 32;
    const sc = (bytes[at + 192 + h * 8 + (l >> 4) + 2 * t] << 24) >> 24;
    out[o + i] = Math.fround(d * sc * q);
  }
}

/** Decode block `blk` of q8_0 bytes: y = d * q, q an int8 (exact). */
function decodeQ80(bytes, blk, out, o) {
  const at = blk * 34;
  const d = halfToFloat(bytes[at] | (bytes[at + 1] << 8));
  for (let j = 0; j < 32; j++) out[o + j] = Math.fround(d * ((bytes[at + 2 + j] << 24) >> 24));
}

/** Decode block `blk` of q4_0 bytes: y = d * (q - 8); byte j holds values j and j + 16. */
function decodeQ40(bytes, blk, out, o) {
  const at = blk * 18;
  const d = halfToFloat(bytes[at] | (bytes[at + 1] << 8));
  for (let j = 0; j < 16; j++) {
    const b = bytes[at + 2 + j];
    out[o + j] = Math.fround(d * ((b & 15) - 8));
    out[o + j + 16] = Math.fround(d * ((b >> 4) - 8));
  }
}

const DECODE = { q4_k: decodeQ4k, q6_k: decodeQ6k, q8_0: decodeQ80, q4_0: decodeQ40 };

/**
 * The float32 values of a block-quantized tensor's bytes, `count` of them.
 * @param {Uint8Array} bytes @param {keyof BLOCK_BYTES} dtype @param {number} count
 */
export function dequantize(bytes, dtype, count, out = new Float32Array(count)) {
  const decode = DECODE[dtype];
  const per = BLOCK_VALUES[dtype];
  for (let blk = 0; blk < count / per; blk++) decode(bytes, blk, out, blk * per);
  return out;
}

registerKernel('dequantize', (out, [a], node, _shapes, [dtype]) => {
  dequantize(/** @type {Uint8Array} */ (a), dtype, out.length, out);
}, { dtypes: QUANT_DTYPES });

// rows idx of a [N, K]: each row's blocks decoded straight into its place in out
registerKernel('dequantize_rows', (out, [a, idx], node, [sa], [dtype]) => {
  const [n, k] = sa;
  const per = BLOCK_VALUES[dtype];
  const rowBytes = (k / per) * BLOCK_BYTES[dtype];
  for (let p = 0; p < idx.length; p++) {
    if (idx[p] < 0 || idx[p] >= n) throw indexError('BACKEND', node, sa, p, idx[p]);
  }
  for (let p = 0; p < idx.length; p++) {
    const row = /** @type {Uint8Array} */ (a).subarray(idx[p] * rowBytes, (idx[p] + 1) * rowBytes);
    for (let blk = 0; blk < k / per; blk++) DECODE[dtype](row, blk, out, p * k + blk * per);
  }
}, { dtypes: QUANT_DTYPES });

// a @ b.T: each row of b decoded once into float32 (a row's scratch, never the whole weight),
// then every dot product in ascending k from 0.0, each product and sum rounded to float32.
registerKernel('matmul_q', (out, [a, b], node, [, sb], [, dtype]) => {
  const [n, k] = sb;
  const rows = out.length / n;
  const row = new Float32Array(k);
  const f = Math.fround;
  const decode = DECODE[dtype];
  const per = BLOCK_VALUES[dtype];
  const rowBytes = (k / per) * BLOCK_BYTES[dtype];
  for (let c = 0; c < n; c++) {
    const rowData = /** @type {Uint8Array} */ (b).subarray(c * rowBytes, (c + 1) * rowBytes);
    for (let blk = 0; blk < k / per; blk++) decode(rowData, blk, row, blk * per);
    for (let r = 0; r < rows; r++) {
      let acc = 0;
      for (let i = 0; i < k; i++) acc = f(acc + f(a[r * k + i] * row[i]));
      out[r * n + c] = acc;
    }
  }
});

const BITS = new Uint32Array(1);
const FLOAT = new Float32Array(BITS.buffer);

/**
 * round-half-even(x * 2^frac) saturated to int32, from the bits (NaN -> 0): the integer steps
 * every backend uses, so no float rounding mode or flush-to-zero can change the answer.
 * @param {number} x a float32 value @param {number} frac
 */
export function toFixed(x, frac) {
  FLOAT[0] = x;
  const bits = BITS[0];
  const neg = bits >>> 31;
  const e = (bits >>> 23) & 255;
  const mant = bits & 0x7fffff;
  if ((e === 255 && mant !== 0) || e === 0) return 0;
  const m = mant | 0x800000;
  const sh = e - 150 + frac;
  let mag;
  if (sh >= 8) return neg ? -2147483648 : 2147483647;
  if (sh >= 0) mag = m * 2 ** sh;
  else if (sh >= -24) {
    const r = -sh;
    let q = m >>> r;
    const rem = m & ((1 << r) - 1);
    const half = 1 << (r - 1);
    if (rem > half || (rem === half && (q & 1))) q += 1;
    mag = q;
  } else mag = 0;
  return neg ? -mag : mag;
}

/**
 * A 64-bit integer sum as float32: rounded once to 24 bits (half to even) and scaled by
 * 2^-2frac, which is exact (frac <= 30 keeps the result normal).
 * @param {bigint} s @param {number} frac
 */
export function fixedToFloat(s, frac) {
  if (s === 0n) return 0;
  const neg = s < 0n;
  let u = neg ? -s : s;
  let p = u.toString(2).length - 1;
  if (p > 23) {
    const r = BigInt(p - 23);
    let q = u >> r;
    const rem = u & ((1n << r) - 1n);
    const half = 1n << (r - 1n);
    if (rem > half || (rem === half && (q & 1n))) q += 1n;
    if (q === 1n << 24n) { q >>= 1n; p += 1; }
    u = q;
  } else u <<= BigInt(23 - p);
  const value = Number(u) * 2 ** (p - 23 - 2 * frac);
  return neg ? -value : value;
}

// [..., M, K] @ [..., K, N]: operands to int32 fixed point, products summed in int64 (BigInt,
// wrapping at 2^64 as the GPUs' 32-bit pairs do), the sum rounded once.
registerKernel('matmul_fixed', (out, [a, b], node, [sa, sb]) => {
  const frac = node.attrs.frac_bits;
  const rows = sa[sa.length - 2];
  const inner = sa[sa.length - 1];
  const cols = sb[sb.length - 1];
  const outBatch = node.shape.slice(0, -2);
  const ia = batchIndex(outBatch, sa.slice(0, -2));
  const ib = batchIndex(outBatch, sb.slice(0, -2));
  const qa = Array.from(a, (x) => BigInt(toFixed(x, frac)));
  const qb = Array.from(b, (x) => BigInt(toFixed(x, frac)));
  for (let m = 0; m < ia.length; m++) {
    const aBase = ia[m] * rows * inner;
    const bBase = ib[m] * inner * cols;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        let acc = 0n;
        for (let k = 0; k < inner; k++) acc += qa[aBase + r * inner + k] * qb[bBase + k * cols + c];
        out[m * rows * cols + r * cols + c] = fixedToFloat(BigInt.asIntN(64, acc), frac);
      }
    }
  }
});
