// clamp's bounds as the 32-bit words the GPU and wasm kernels compare with (docs/protocol.md):
// float32 bits of min / max (no bound: -inf / +inf, which no comparison passes), or for int32
// ceil(min) / floor(max) saturated to the int32 range (no bound: INT32_MIN / INT32_MAX), as
// unsigned words. The WGSL planner (twin: pylib/gpulab/native/planner.py), the webgl2 and the
// wasm kernels all take them from here.

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const F32_WORD = new Float32Array(1);
const U32_WORD = new Uint32Array(F32_WORD.buffer);

/** The bits of a number rounded to float32. @param {number} v */
export function f32Bits(v) {
  F32_WORD[0] = v;
  return U32_WORD[0];
}

/**
 * The bounds as numbers of the dtype: float32 (no bound: -inf / +inf), or int32 ceil(min) /
 * floor(max) saturated to the int32 range (no bound: INT32_MIN / INT32_MAX).
 * @param {{min?: number|null, max?: number|null}} attrs @param {string} dtype
 * @returns {[number, number]}
 */
export function clampBounds({ min = null, max = null }, dtype) {
  if (dtype === 'float32') return [min ?? -Infinity, max ?? Infinity];
  const sat = (/** @type {number} */ v) => Math.min(Math.max(v, INT32_MIN), INT32_MAX);
  return [min === null ? INT32_MIN : sat(Math.ceil(min)), max === null ? INT32_MAX : sat(Math.floor(max))];
}

/**
 * The bounds as unsigned 32-bit words: float32 bits, or int32 two's complement.
 * @param {{min?: number|null, max?: number|null}} attrs @param {string} dtype
 * @returns {[number, number]}
 */
export function clampWords(attrs, dtype) {
  const [lo, hi] = clampBounds(attrs, dtype);
  return dtype === 'float32' ? [f32Bits(lo), f32Bits(hi)] : [lo >>> 0, hi >>> 0];
}

/** The kernels' dtype code (p.dt / u_dt). @type {Record<string, number>} */
export const DTYPE_CODE = Object.freeze({ float32: 0, int32: 1 });
