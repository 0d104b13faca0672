// The protocol-v3 select ops (maximum, minimum, eq..ge, where, cast, hash_uniform, dropout) on
// the 32-bit words of the tensor textures: one shader, select.glsl, with the op and the
// operands' dtype as defines (the OP codes of select.wgsl) and each operand read through the
// sampler of its texture kind (R32F / R32I / R32UI); the result is written as a word into the
// target of its dtype (WORDS_OUT, OUT_INT / OUT_UINT).
import { DTYPE_NAMES } from '../../dtypes.mjs';
import { dropoutWords } from '../../hash-uniform.mjs';
import { texKindOf } from './textures.mjs';
import { broadcastStrides, pad4, registerKernel, sizeOf } from './registry.mjs';

const SELECT_OP = { maximum: 0, minimum: 1, eq: 2, ne: 3, lt: 4, le: 5, gt: 6, ge: 7, where: 8,
  cast: 9, hash_uniform: 10, dropout: 11 };
const DTYPE_CODE = { float32: 0, int32: 1, uint32: 2, bool: 3 };
const BROADCASTING = new Set(['maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'where']);

/** The defines of operand `letter` of a dtype (its sampler) and of the result (its target). */
const kindDefine = (/** @type {string} */ prefix, /** @type {string} */ dtype) =>
  ({ int: { [`${prefix}_INT`]: 1 }, uint: { [`${prefix}_UINT`]: 1 }, float: {} })[texKindOf(dtype)];

for (const [op, code] of Object.entries(SELECT_OP)) {
  registerKernel(op, (node, k) => {
    const ids = node.operands;
    const dtypeOf = (/** @type {number} */ id) => k.node(id).dtype || 'float32';
    /** @type {Record<string, number>} */
    const defines = { WORDS_OUT: 1, SEL_OP: code, SEL_DT: DTYPE_CODE[dtypeOf(ids[0])],
      ...kindDefine('OUT', node.dtype || 'float32') };
    const letters = ['a', 'b', 'c'];
    /** @type {Record<string, number>} */
    const inputs = {};
    ids.forEach((id, i) => {
      inputs[`u_${letters[i]}`] = k.slot(id);
      Object.assign(defines, kindDefine(letters[i].toUpperCase(), dtypeOf(id)));
      if (i > 0) defines[`HAS_${letters[i].toUpperCase()}`] = 1;
    });
    const { threshold, scaleBits } = op === 'dropout' ? dropoutWords(node.attrs.p)
      : { threshold: 0, scaleBits: 0 };
    /** @type {Record<string, [string, any]>} */
    const uniforms = { u_seed: ['u', node.attrs.seed ?? 0], u_thr: ['u', threshold],
      u_scale: ['u', scaleBits], u_to: ['u', op === 'cast' ? DTYPE_CODE[node.attrs.dtype] : 0] };
    const out = node.shape;
    if (BROADCASTING.has(op) && !ids.every((id) => sizeOf(k.shape(id)) === sizeOf(out))) {
      defines.BROADCAST = 1;
      uniforms.u_shape = ['i4', pad4(out)];
      ids.forEach((id, i) => { uniforms[`u_s${letters[i]}`] = ['i4', broadcastStrides(k.shape(id), out)]; });
    }
    return [{ shader: 'select.glsl', defines, inputs, uniforms, target: k.out }];
  }, { dtypes: DTYPE_NAMES });
}
