// Protocol-v3 ops at float32 and int32 on the 32-bit words of the tensor textures:
// abs / square / clamp (map_bits.glsl) and reduce_max / reduce_min / argmax / argmin
// (extremes.glsl: an order-independent best-of, one pass per row or 64 lanes then a tree).
import { registerKernel, sizeOf } from './registry.mjs';
import { clampWords, DTYPE_CODE } from '../../clamp-bounds.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };
/** Rows longer than this take two passes (64 fragments per row, then the 64 candidates). */
const SPLIT_LEN = 1024;

/** @param {import('./registry.mjs').KernelContext} k @param {any} node */
const operandDtype = (k, node) => k.node(node.operands[0]).dtype || 'float32';

for (const op of ['abs', 'square', 'clamp']) {
  registerKernel(op, (node, k) => {
    const dtype = operandDtype(k, node);
    const [lo, hi] = op === 'clamp' ? clampWords(node.attrs, dtype) : [0, 0];
    return [{
      shader: 'map_bits.glsl', defines: { [`OP_${op}`]: 1 },
      inputs: { u_a: k.slot(node.operands[0]) },
      uniforms: { u_dt: ['i', DTYPE_CODE[dtype]], u_lo: ['u', lo], u_hi: ['u', hi] },
      target: k.out,
    }];
  }, DTYPES);
}

const FLAVOUR = {
  reduce_max: { WANT_MAX: 1 }, reduce_min: {}, argmax: { WANT_MAX: 1, ARG: 1 }, argmin: { ARG: 1 },
};

for (const [op, flavour] of Object.entries(FLAVOUR)) {
  registerKernel(op, (node, k) => {
    const a = node.operands[0];
    const shape = k.shape(a);
    const { axis } = node.attrs;
    const len = axis === null ? sizeOf(shape) : shape[axis];
    const inner = axis === null ? 1 : sizeOf(shape.slice(axis + 1));
    const rows = sizeOf(shape) / len;
    const uniforms = { u_len: ['i', len], u_inner: ['i', inner],
      u_dt: ['i', DTYPE_CODE[operandDtype(k, node)]] };
    const inputs = { u_a: k.slot(a) };
    if (len <= SPLIT_LEN) {
      return [{ shader: 'extremes.glsl', defines: { STAGE_FUSED: 1, ...flavour }, inputs,
        uniforms, target: k.out }];
    }
    const partials = k.temp(rows * 64);
    return [
      { shader: 'extremes.glsl', defines: { STAGE_LANES: 1, ...flavour }, inputs, uniforms,
        target: partials },
      { shader: 'extremes.glsl', defines: { STAGE_TREE: 1, ...flavour },
        inputs: { ...inputs, u_p: partials }, uniforms, target: k.out },
    ];
  }, DTYPES);
}
