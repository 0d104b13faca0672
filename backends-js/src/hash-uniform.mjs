// The counter-hash uniform of hash_uniform and dropout (docs/protocol.md "The counter-hash
// uniform"): 32-bit wrapping multiply, xor and shifts only, so WGSL, GLSL ES 3.00, Rust, JS and
// numpy give the same bits. The dropout words (keep threshold, scale) are computed once here and
// passed to every GPU and wasm kernel. Twin: pylib/gpulab/hash_uniform.py.

/** lowbias32 (C. Wellons' hash-prospector): a bijection of the 32-bit words. @param {number} v */
export function lowbias32(v) {
  let x = v >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}

/** The per-(seed, counter) key: lowbias32(lowbias32(seed) ^ counter). */
export function hashKey(/** @type {number} */ seed, /** @type {number} */ counter) {
  return lowbias32((lowbias32(seed) ^ counter) >>> 0);
}

/** h of element i for a key: lowbias32(key ^ lowbias32(i)). */
export function hashWord(/** @type {number} */ key, /** @type {number} */ i) {
  return lowbias32((key ^ lowbias32(i)) >>> 0);
}

/** The uniform of a hash word: its top 24 bits times 2^-24, in [0, 1), exact in float32. */
export const uniformOf = (/** @type {number} */ h) => (h >>> 8) * 2 ** -24;

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/**
 * dropout's words: keep element i when (h >> 8) >= threshold, threshold = ceil(p * 2^24)
 * (the same as u >= p: p * 2^24 is exact), then multiply by scale = float32(1 / (1 - p))
 * (evaluated in float64, rounded once). scaleBits: its float32 bits.
 * @param {number} p a float32 value in [0, 1) (the validator rounded it)
 */
export function dropoutWords(p) {
  const scale = Math.fround(1 / (1 - p));
  F32[0] = scale;
  return { threshold: Math.ceil(p * 2 ** 24), scale, scaleBits: U32[0] };
}
