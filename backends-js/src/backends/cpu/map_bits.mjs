// clamp (protocol v3) at float32 and int32: hand-written (family custom: two optional bounds,
// ceil/floor-ed and saturated at int32), as on the GPUs (map_bits.wgsl); abs and square are
// generated map1 ops (maps.mjs).
import { registerKernel } from './registry.mjs';
import { clampBounds } from '../../clamp-bounds.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };
const isInt = (/** @type {ArrayLike<number>} */ a) => a instanceof Int32Array;

// Comparisons, not Math.min/max: NaN stays NaN and a value equal to a bound is kept (-0 too).
registerKernel('clamp', (out, [a], node) => {
  const [lo, hi] = clampBounds(node.attrs, isInt(a) ? 'int32' : 'float32');
  for (let i = 0; i < out.length; i++) {
    const y = a[i] < lo ? lo : a[i];
    out[i] = y > hi ? hi : y;
  }
}, DTYPES);
