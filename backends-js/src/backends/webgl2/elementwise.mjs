// Elementwise kernels: unary ops, broadcasting binary ops, and the two-operand optimizer steps.
import { registerKernel, broadcastStrides, pad4, sizeOf } from './registry.mjs';
import { matmulProduct } from './matmul.mjs';
import { epilogueMap2, familyOps, kernelTable, langDtypes } from '../../kernel-table.mjs';

// Every map op of the kernel table: its GLSL arms in unary.glsl / binary.glsl are generated from
// the same table (make gen), one `op` per dtype, so these lists cannot drift from the shaders.
// An int32 node picks the int32 arm (A_INT: its operands are R32I textures read through integer
// samplers) and writes its R32I target as ints (INT_KERNEL, common.glsl).
/** @param {any} node @param {Record<string, number>} defines */
const dtypeDefines = (node, defines) =>
  (node.dtype === 'int32' ? { ...defines, A_INT: 1, INT_KERNEL: 1 } : defines);

for (const op of familyOps('map1')) {
  registerKernel(op, (node, k) => [{
    shader: 'unary.glsl', defines: dtypeDefines(node, { [`OP_${op}`]: 1 }),
    inputs: { u_a: k.slot(node.operands[0]) }, target: k.out,
  }], { dtypes: langDtypes(op, 'glsl') });
}

/**
 * A binary pass; broadcasting indexing only when an operand's shape differs from the output's.
 * @param {string} op @param {any} node @param {import('./registry.mjs').KernelContext} k
 * @param {Record<string, [string, any]>} [uniforms]
 */
function binaryPass(op, node, k, uniforms = {}) {
  const [a, b] = node.operands;
  const out = node.shape;
  const same = (id) => sizeOf(k.shape(id)) === sizeOf(out);
  const broadcast = !(same(a) && same(b));
  const pass = {
    shader: 'binary.glsl', defines: dtypeDefines(node, { [`OP_${op}`]: 1 }),
    inputs: { u_a: k.slot(a), u_b: k.slot(b) }, uniforms: { ...uniforms }, target: k.out,
  };
  if (broadcast) {
    pass.defines.BROADCAST = 1;
    pass.uniforms.u_shape = ['i4', pad4(out)];
    pass.uniforms.u_sa = ['i4', broadcastStrides(k.shape(a), out)];
    pass.uniforms.u_sb = ['i4', broadcastStrides(k.shape(b), out)];
  }
  // The matmul epilogue: an absorbed matmul operand is read in its packed form (no unpack pass).
  const absorbed = [a, b].findIndex((id) => k.absorbed?.(id));
  if (absorbed < 0) return [pass];
  const product = matmulProduct(k.node(node.operands[absorbed]), k);
  delete pass.inputs[absorbed ? 'u_b' : 'u_a'];
  pass.defines[absorbed ? 'B_RESULT' : 'A_RESULT'] = 1;
  Object.assign(pass.defines, product.read.defines);
  Object.assign(pass.inputs, product.read.inputs);
  Object.assign(pass.uniforms, product.read.uniforms);
  return [...product.passes, pass];
}

const EPILOGUE = epilogueMap2();

/**
 * The matmul epilogue (kernel table `epilogue`: one rounding of the two operands): a float32
 * add / sub / mul takes a matmul operand that nothing else reads into its own pass, which reads
 * the product packed, so the product is never unpacked into a tensor. The sum is the matmul's
 * finished value either way, so the bits are those of the two passes.
 * @type {import('./registry.mjs').Absorbs}
 */
function matmulEpilogue(node, { nodeOf, pinned, options }) {
  if ((node.dtype ?? 'float32') !== 'float32' || !(node.op in EPILOGUE)) return [];
  if (options?.epilogue === false) return [];  // test hook webgl2NoEpilogue
  const [a, b] = node.operands;
  if (a === b) return [];
  const product = [a, b].find((id) => nodeOf(id).op === 'matmul' && !pinned(id));
  return product === undefined ? [] : [[product]];
}

// A float attribute (the kernel table's `scalar`) goes in as the float32 uniform u_p; where the
// expression reads u_q it gets 1 - that attribute formed in float64 first, so it is rounded once
// (1 - fround(0.999) would be off by ~100 ulps).
for (const op of familyOps('map2')) {
  const { scalar, glsl } = kernelTable.ops[op];
  const usesQ = /\bu_q\b/.test(JSON.stringify(glsl));  // a text, or one per dtype
  registerKernel(op, (node, k) => {
    if (!scalar) return binaryPass(op, node, k);
    const value = node.attrs[scalar];
    return binaryPass(op, node, k, usesQ ? { u_p: ['f', value], u_q: ['f', 1 - value] }
      : { u_p: ['f', value] });
  }, { dtypes: langDtypes(op, 'glsl'), ...(op in EPILOGUE ? { absorbs: matmulEpilogue } : {}) });
}

/**
 * What an update can compute in its own pass: the adam_m and adam_v nodes feeding it through
 * the same gradient, and that gradient too when it is a matmul nothing reads from outside (the
 * update then reads the product without unpacking it).
 * @type {import('./registry.mjs').Absorbs}
 */
function adamMoments(node, { nodeOf, pinned }) {
  const [, m, v] = node.operands;
  const [mNode, vNode] = [nodeOf(m), nodeOf(v)];
  const g = mNode.operands[1];
  // The fused pass reads every other operand from its texture while it writes m and v, so
  // none of them may be m or v (e.g. adam_v(m, g) or adam_update(m, m, v, t)).
  const others = [node.operands[0], node.operands[3], mNode.operands[0], vNode.operands[0]];
  const fits = mNode.op === 'adam_m' && vNode.op === 'adam_v' && vNode.operands[1] === g &&
    m !== v && !others.includes(m) && !others.includes(v);
  if (!fits) return [];
  // Not when the update or a moment also reads the gradient as another operand: that read
  // needs the gradient as a tensor.
  const readsElsewhere = [mNode.operands[0], vNode.operands[0], node.operands[0], node.operands[3]]
    .includes(g);
  const product = nodeOf(g).op === 'matmul' && !pinned(g) && !readsElsewhere;
  return product ? [[m, v, g], [m, v]] : [[m, v]];
}

// The bias corrections once per step (one packed texel), then the update per element. Where
// the adam_m and adam_v feeding it feed nothing else, one pass computes all three (3 color
// attachments): the moments are read and written once instead of twice; where their gradient
// is a matmul read by nothing else, that pass reads the product in its packed form.
registerKernel('adam_update', (node, k) => {
  const [a, b, c, t] = node.operands;
  const { lr, beta1, beta2, eps } = node.attrs;
  // one bias texel per step for every update of the same t and settings
  const { value: bias, passes } = k.shared(`adam-bias:${t}:${lr}:${beta1}:${beta2}`, (alloc) => {
    const texel = alloc(1, { channels: 4 });
    return { value: texel, passes: [{
      shader: 'adam_update.glsl', defines: { PACKED_OUT: 1, STAGE_BIAS: 1 }, inputs: { u_t: k.slot(t) },
      uniforms: { u_lr: ['f', lr], u_lnb1: ['f', Math.log(beta1)], u_lnb2: ['f', Math.log(beta2)] },
      target: texel,
    }] };
  });
  if (k.absorbed(b) && k.absorbed(c)) {
    const [m0, g] = k.node(b).operands;
    const [v0] = k.node(c).operands;
    const b1 = k.node(b).attrs.beta1;
    const b2 = k.node(c).attrs.beta2;
    const fused = {
      shader: 'adam_update.glsl', defines: { OUT3: 1, STAGE_FUSED: 1, ...packedDefines(k, node.id, a, m0, v0, g) },
      inputs: { u_a: k.slot(a), u_bias: bias, u_m0: k.slot(m0), u_v0: k.slot(v0) },
      uniforms: { u_eps: ['f', eps], u_b1: ['f', b1], u_c1: ['f', 1 - b1], u_b2: ['f', b2],
        u_c2: ['f', 1 - b2] },
      target: k.out, alsoTargets: [k.slot(b), k.slot(c)],
    };
    if (k.absorbed(g)) {
      const product = matmulProduct(k.node(g), k);
      passes.push(...product.passes);
      Object.assign(fused.defines, product.read.defines);
      Object.assign(fused.inputs, product.read.inputs);
      Object.assign(fused.uniforms, product.read.uniforms);
    } else {
      fused.inputs.u_g = k.slot(g);
    }
    passes.push(fused);
    return passes;
  }
  passes.push({
    shader: 'adam_update.glsl',
    inputs: { u_a: k.slot(a), u_b: k.slot(b), u_c: k.slot(c), u_bias: bias },
    uniforms: { u_eps: ['f', eps] },
    target: k.out,
  });
  return passes;
}, { absorbs: adamMoments, packs: {
  // packed: the fused pass only (one fragment per 4 elements of the three results)
  reads: (node, id, view) => fusedUpdate(node, view) &&
    [...node.operands.slice(0, 3), ...moments(node, view).flatMap((n) => n.operands)].includes(id),
  writes: (node, view) => (fusedUpdate(node, view) ? [node.id, node.operands[1], node.operands[2]] : null),
} });

/** Whether an update's pass computes its moments (they are absorbed). @param {any} node @param {any} view */
function fusedUpdate(node, view) {
  return view.absorber(node.operands[1]) === node.id && view.absorber(node.operands[2]) === node.id;
}

/** The adam_m and adam_v nodes of an update. @param {any} node @param {any} view */
function moments(node, view) {
  return [view.nodeOf(node.operands[1]), view.nodeOf(node.operands[2])];
}

/**
 * Defines of the fused pass for a packed update: PACKED_OUT and which operands are packed (the
 * rest are R32F tensors read 4 at a time); none for an update stored as R32F.
 * @param {import('./registry.mjs').KernelContext} k @param {number} id the update
 * @param {number} a @param {number} m0 @param {number} v0 @param {number} g
 */
function packedDefines(k, id, a, m0, v0, g) {
  if (!k.packed(id)) return {};
  const bit = (id) => (k.packed(id) ? 1 : 0);
  return { PACKED_OUT: 1, A_PACKED: bit(a), M_PACKED: bit(m0), V_PACKED: bit(v0),
    ...(k.absorbed(g) ? {} : { G_PACKED: bit(g) }) };
}
