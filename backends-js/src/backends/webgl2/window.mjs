// The protocol-v6 window ops on WebGL2 (conv2d, max_pool2d, avg_pool2d, resize): one pass of
// kernels/glsl/window.glsl each, a fragment per output element walking its own window in the
// protocol's order (window.wgsl's arithmetic). Operands are R32F textures in the usual layout.
import { COORD_MODES, NEAREST_MODES, convOperands, windowParams } from '../../conv-geometry.mjs';
import { registerKernel } from './registry.mjs';

/** The uniforms of a window op (window.glsl's names). */
function uniforms(node, p) {
  const { attrs } = node;
  const resize = node.op === 'resize';
  return {
    u_dims: ['i4', [p.n, p.c, p.h, p.w]], u_out: ['i4', [p.m, p.oh, p.ow, p.cg]],
    u_k: ['i4', [p.kh, p.kw, p.sh, p.sw]],
    u_d: ['i4', [p.dh, p.dw, p.mg, attrs.count_include_pad ? 1 : 0]],
    u_pad: ['i4', [p.pt, p.pl, p.pb, p.pr]],
    u_mode: ['i4', [resize ? COORD_MODES.indexOf(attrs.coordinate_transformation_mode) : 0,
      resize ? NEAREST_MODES.indexOf(attrs.nearest_mode) : 0, 0, 0]],
  };
}

registerKernel('conv2d', (node, k) => {
  const { bias, a, w } = convOperands(node.operands);
  const p = windowParams(node, node.operands.map((id) => k.shape(id)));
  const inputs = { u_a: k.slot(a), u_wt: k.slot(w), ...(bias === null ? {} : { u_bias: k.slot(bias) }) };
  return [{ shader: 'window.glsl', defines: { WIN_OP: 0, ...(bias === null ? {} : { HAS_BIAS: 1 }) },
    inputs, uniforms: uniforms(node, p), target: k.out }];
});

for (const op of ['max_pool2d', 'avg_pool2d']) {
  registerKernel(op, (node, k) => {
    const a = node.operands[0];
    const p = windowParams(node, [k.shape(a)]);
    return [{ shader: 'window.glsl', defines: { WIN_OP: op === 'max_pool2d' ? 1 : 2 },
      inputs: { u_a: k.slot(a) }, uniforms: uniforms(node, p), target: k.out }];
  });
}

registerKernel('resize', (node, k) => {
  const a = node.operands[0];
  const [n, c, h, w] = k.shape(a);
  const p = { n, c, h, w, m: c, oh: node.shape[2], ow: node.shape[3], kh: 1, kw: 1, sh: 1, sw: 1,
    dh: 1, dw: 1, pt: 0, pl: 0, pb: 0, pr: 0, cg: 1, mg: 1 };
  return [{ shader: 'window.glsl', defines: { WIN_OP: node.attrs.mode === 'linear' ? 4 : 3 },
    inputs: { u_a: k.slot(a) }, uniforms: uniforms(node, p), target: k.out }];
});
