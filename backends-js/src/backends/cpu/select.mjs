// maximum, minimum, the comparison masks, where, cast, hash_uniform and dropout (protocol v3,
// family custom: one select kernel per GPU backend, select.wgsl / select.glsl / select.rs).
// JS numbers give the IEEE rules directly (NaN unordered, -0 == +0); the signed-zero rule of
// maximum/minimum and the cast rules are written out. docs/protocol.md "The v3 select ops".
import { registerKernel } from './registry.mjs';
import { binary, byDtype, ternary, unary } from './elementwise.mjs';
import { dropoutWords, hashKey, hashWord, uniformOf } from '../../hash-uniform.mjs';

const V3 = { dtypes: ['float32', 'int32'] };

// IEEE 754-2019 maximum / minimum: NaN propagates (a's first), -0 < +0.
const maxF = (/** @type {number} */ x, /** @type {number} */ y) => {
  if (x !== x) return x;
  if (y !== y) return y;
  if (x !== y) return x > y ? x : y;
  return Object.is(x, -0) ? y : x;
};
const minF = (/** @type {number} */ x, /** @type {number} */ y) => {
  if (x !== x) return x;
  if (y !== y) return y;
  if (x !== y) return x < y ? x : y;
  return Object.is(x, -0) ? x : y;
};

registerKernel('maximum', byDtype({ float32: binary(maxF), int32: binary(Math.max) }), V3);
registerKernel('minimum', byDtype({ float32: binary(minF), int32: binary(Math.min) }), V3);

/** @type {Record<string, (x: number, y: number) => number>} */
const COMPARE = {
  eq: (x, y) => (x === y ? 1 : 0),
  ne: (x, y) => (x !== y ? 1 : 0),
  lt: (x, y) => (x < y ? 1 : 0),
  le: (x, y) => (x <= y ? 1 : 0),
  gt: (x, y) => (x > y ? 1 : 0),
  ge: (x, y) => (x >= y ? 1 : 0),
};
for (const [op, f] of Object.entries(COMPARE)) registerKernel(op, binary(f), V3);

registerKernel('where', ternary((c, x, y) => (c ? x : y)), V3);

/** float32 -> an integer dtype: truncation toward zero, NaN -> 0, saturating to [lo, hi]. */
const truncSat = (/** @type {number} */ lo, /** @type {number} */ hi) =>
  unary((x) => (x !== x ? 0 : Math.min(Math.max(Math.trunc(x), lo), hi)));

/**
 * cast by (from, to): a typed-array store does the rest (Float32Array rounds to nearest even,
 * Int32Array / Uint32Array keep the low 32 bits).
 */
function castKernel(/** @type {string} */ from, /** @type {string} */ to) {
  if (to === 'bool') return unary((x) => (x !== 0 ? 1 : 0)); // NaN !== 0: 1; -0: 0
  if (from === 'float32' && to === 'int32') return truncSat(-2147483648, 2147483647);
  if (from === 'float32' && to === 'uint32') return truncSat(0, 4294967295);
  return unary((x) => x);
}

const DTYPE_OF = new Map([[Float32Array, 'float32'], [Int32Array, 'int32'],
  [Uint32Array, 'uint32'], [Uint8Array, 'bool']]);

registerKernel('cast', (out, ins, node, shapes) => {
  const from = DTYPE_OF.get(/** @type {any} */ (ins[0]).constructor);
  castKernel(from, node.attrs.dtype)(out, ins, node, shapes);
}, { dtypes: ['float32', 'int32', 'uint32', 'bool'] });

registerKernel('hash_uniform', (out, [counter], node) => {
  const key = hashKey(node.attrs.seed, counter[0]);
  for (let i = 0; i < out.length; i++) out[i] = uniformOf(hashWord(key, i));
}, { dtypes: ['uint32'] });

registerKernel('dropout', (out, [a, counter], node) => {
  const key = hashKey(node.attrs.seed, counter[0]);
  const { threshold, scale } = dropoutWords(node.attrs.p);
  // kept: one float32 multiply (the float64 product of two float32 is exact, the store rounds
  // once); dropped: a * 0 (+-0, NaN for NaN or inf), the formula's a * mask
  for (let i = 0; i < out.length; i++) {
    out[i] = (hashWord(key, i) >>> 8) >= threshold ? a[i] * scale : a[i] * 0;
  }
});
