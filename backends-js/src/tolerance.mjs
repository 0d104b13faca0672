// The protocol's tolerance judge (docs/protocol.md "Tolerances"), the JS twin of
// pylib/gpulab/conformance/compare.py's compare(): pass when |got - ref| <= ulps * ulp32(ref) +
// scale_eps * eps32 * scale + atol with the class's numbers from the op table; equal NaNs and
// equal infinities pass; a ref beyond float32 expects the infinity it rounds to; 'exact' compares
// bits; integer dtypes compare exactly. e2e/test_tolerance_twins.py checks the twins agree.
import table from './ops.json' with { type: 'json' };

export const EPS32 = 2 ** -23;
const CLASSES = table.tolerance_classes;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 bits of x (rounded to float32 first). */
function bits(x) { f32[0] = x; return u32[0]; }

/** Spacing of float32 at |ref| (numpy's np.spacing): the smallest subnormal at 0, NaN at inf. */
export function ulp32(ref) {
  const a = Math.abs(Math.fround(ref));
  if (!Number.isFinite(a)) return NaN;
  f32[0] = a;
  u32[0] += 1;
  return f32[0] - a;
}

/** |got - ref| in float32 ulps of ref; 0 for matching non-finite values, Infinity for mismatches. */
export function ulpError(got, ref) {
  const want = Math.fround(ref);
  if ((Number.isNaN(got) && Number.isNaN(want)) || (!Number.isFinite(got) && !Number.isNaN(got) && got === want)) return 0;
  const err = Math.abs(got - ref) / ulp32(ref);
  return Number.isNaN(err) ? Infinity : err;
}

/** The absolute error a class allows at one element. */
export function allowedError(ref, scale, cls) {
  return cls.ulps * ulp32(ref) + cls.scale_eps * EPS32 * scale + cls.atol;
}

function elementOk(got, ref, scale, tolerance, cls) {
  const want = Math.fround(ref);
  if (Number.isNaN(got) && Number.isNaN(want)) return true;
  if (tolerance === 'exact') return bits(got) === bits(want);
  if (!Number.isFinite(want) && got === want) return true; // includes a ref that overflows float32
  return Number.isFinite(ref) && Number.isFinite(got) && Math.abs(got - ref) <= allowedError(ref, scale, cls);
}

const FLOAT_ARRAYS = [Float32Array, Float64Array];

function judgeInts(got, ref, dtype) {
  const n = got.length;
  if (FLOAT_ARRAYS.some((T) => got instanceof T)) {
    return { passed: false, maxUlp: Infinity, bad: n, worst: 0, detail: `got float data, want ${dtype}` };
  }
  let bad = 0; let worst = 0;
  for (let i = 0; i < n; i++) if (Number(got[i]) !== Number(ref[i]) && bad++ === 0) worst = i;
  const detail = bad ? `${bad} of ${n} ${dtype} elements differ; first at [${worst}]: got ${got[worst]} want ${ref[worst]} (exact)` : '';
  return { passed: bad === 0, maxUlp: bad ? Infinity : 0, bad, worst, detail };
}

/**
 * Judge `got` against the reference `ref` (flat, same length) under a tolerance class.
 * @param {ArrayLike<number>} got @param {ArrayLike<number>} ref
 * @param {ArrayLike<number>|number} scale per element, or one number for all (0: no scale term)
 * @param {string} tolerance a class of ops.json's tolerance_classes
 * @param {string} [dtype] a non-float32 dtype compares integers exactly
 * @returns {{passed: boolean, maxUlp: number, bad: number, worst: number, detail: string}}
 */
export function judge(got, ref, scale, tolerance, dtype = 'float32') {
  if (dtype !== 'float32') return judgeInts(got, ref, dtype);
  const cls = CLASSES[tolerance];
  if (!cls) throw new Error(`unknown tolerance class "${tolerance}"`);
  const scaleAt = typeof scale === 'number' ? () => scale : (i) => scale[i];
  let bad = 0; let firstBad = 0; let maxUlp = 0; let argMax = 0;
  for (let i = 0; i < ref.length; i++) {
    const g = Math.fround(got[i]);
    if (!elementOk(g, ref[i], scaleAt(i), tolerance, cls) && bad++ === 0) firstBad = i;
    const err = ulpError(g, ref[i]);
    if (err > maxUlp) { maxUlp = err; argMax = i; }
  }
  const worst = bad ? firstBad : argMax;
  let detail = '';
  if (bad) {
    const allowed = allowedError(ref[worst], scaleAt(worst), cls);
    detail = `${bad} of ${ref.length} elements outside '${tolerance}'; first at [${worst}]: ` +
      `got ${Math.fround(got[worst])} want ${ref[worst]} (err ${ulpError(Math.fround(got[worst]), ref[worst]).toPrecision(3)} ulp, ` +
      `allowed ${allowed.toPrecision(3)} abs${tolerance === 'exact' ? ', bits' : ''})`;
  }
  return { passed: bad === 0, maxUlp, bad, worst, detail };
}
