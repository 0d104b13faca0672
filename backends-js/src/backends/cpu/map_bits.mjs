// square, clamp (protocol v3) at float32 and int32: hand-written (family custom), as on the
// GPUs (map_bits.wgsl); abs is a generated map1 op (maps.mjs). An int32 square needs Math.imul
// (x * x in float64 loses the low bits past 2^53 before the Int32Array store could wrap them).
import { registerKernel } from './registry.mjs';
import { clampBounds } from '../../clamp-bounds.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };
const isInt = (/** @type {ArrayLike<number>} */ a) => a instanceof Int32Array;

registerKernel('square', (out, [a]) => {
  if (isInt(a)) for (let i = 0; i < out.length; i++) out[i] = Math.imul(a[i], a[i]);
  else for (let i = 0; i < out.length; i++) out[i] = a[i] * a[i];
}, DTYPES);

// Comparisons, not Math.min/max: NaN stays NaN and a value equal to a bound is kept (-0 too).
registerKernel('clamp', (out, [a], node) => {
  const [lo, hi] = clampBounds(node.attrs, isInt(a) ? 'int32' : 'float32');
  for (let i = 0; i < out.length; i++) {
    const y = a[i] < lo ? lo : a[i];
    out[i] = y > hi ? hi : y;
  }
}, DTYPES);
