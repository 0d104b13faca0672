// Protocol-v3 ops at float32 and int32 on the 32-bit words of the tensor textures:
// clamp (map_bits.glsl) and reduce_max / reduce_min / argmax / argmin
// (extremes.glsl: an order-independent best-of, one pass per row or 64 lanes then a tree).
import { registerKernel, sizeOf } from './registry.mjs';
import { clampWords } from '../../clamp-bounds.mjs';

const DTYPES = { dtypes: ['float32', 'int32'] };
/** Rows longer than this take two passes (64 fragments per row, then the 64 candidates). */
const SPLIT_LEN = 1024;

/** @param {import('./registry.mjs').KernelContext} k @param {any} node */
const operandDtype = (k, node) => k.node(node.operands[0]).dtype || 'float32';
/** Defines for an int32 operand (an R32I texture) and an int32 result (an R32I target). */
const intDefines = (/** @type {string} */ inDtype, /** @type {string} */ outDtype) => ({
  ...(inDtype === 'int32' ? { A_INT: 1 } : {}), ...(outDtype === 'int32' ? { OUT_INT: 1 } : {}),
});

// (abs and square are generated map1 ops: elementwise.mjs, unary.glsl)
registerKernel('clamp', (node, k) => {
  const dtype = operandDtype(k, node);
  const [lo, hi] = clampWords(node.attrs, dtype);
  return [{
    shader: 'map_bits.glsl', defines: { OP_clamp: 1, WORDS_OUT: 1, ...intDefines(dtype, dtype) },
    inputs: { u_a: k.slot(node.operands[0]) },
    uniforms: { u_lo: ['u', lo], u_hi: ['u', hi] },
    target: k.out,
  }];
}, DTYPES);

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
    const uniforms = { u_len: ['i', len], u_inner: ['i', inner] };
    const inputs = { u_a: k.slot(a) };
    const dtypes = intDefines(operandDtype(k, node), node.dtype || 'float32');
    const out = { WORDS_OUT: 1, ...flavour, ...dtypes };
    if (len <= SPLIT_LEN) {
      return [{ shader: 'extremes.glsl', defines: { STAGE_FUSED: 1, ...out }, inputs, uniforms,
        target: k.out }];
    }
    const partials = k.temp(rows * 64);  // R32F: each lane's chunk count c, exact as a float
    const lanes = { STAGE_LANES: 1, ...flavour, ...(dtypes.A_INT ? { A_INT: 1 } : {}) };
    return [
      { shader: 'extremes.glsl', defines: lanes, inputs, uniforms, target: partials },
      { shader: 'extremes.glsl', defines: { STAGE_TREE: 1, ...out },
        inputs: { ...inputs, u_p: partials }, uniforms, target: k.out },
    ];
  }, DTYPES);
}
