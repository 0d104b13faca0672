// The protocol-v6 window ops on wasm (kernels/wasm/src/window.rs): direct kernels, each output
// walking its own window in the protocol's order (the JS cpu kernels' arithmetic, bit for bit).
// The descriptor is window.wgsl's Params layout (planner-window.mjs), its last word the flags
// (conv2d: 1 with a bias; resize: 1 linear).
import { COORD_MODES, NEAREST_MODES, windowParams } from '../../conv-geometry.mjs';
import { registerKernel } from './registry.mjs';

/** The 24 descriptor words of a window op. */
function words(node, shapes) {
  const resize = node.op === 'resize';
  const [n, c, h, w] = shapes[resize ? 0 : shapes.length - (node.op === 'conv2d' ? 2 : 1)];
  const p = resize
    ? { n, c, h, w, m: c, oh: node.shape[2], ow: node.shape[3], kh: 1, kw: 1, sh: 1, sw: 1,
      dh: 1, dw: 1, pt: 0, pl: 0, pb: 0, pr: 0, cg: 1, mg: 1 }
    : windowParams(node, shapes);
  const { attrs } = node;
  const flags = resize ? Number(attrs.mode === 'linear') : Number(node.op === 'conv2d' && shapes.length === 3);
  return [node.shape.reduce((x, y) => x * y, 1), p.n, p.c, p.h, p.w, p.m, p.oh, p.ow, p.kh, p.kw,
    p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.pb, p.pr, p.cg, p.mg, attrs.count_include_pad ? 1 : 0,
    resize ? COORD_MODES.indexOf(attrs.coordinate_transformation_mode) : 0,
    resize ? NEAREST_MODES.indexOf(attrs.nearest_mode) : 0, flags];
}

registerKernel('conv2d', ({ exports, node, operand, shape, out, desc }) => {
  const shapes = node.operands.map((_, k) => shape(k));
  const d = desc(words(node, shapes));
  const [a, w, bias] = shapes.length === 3 ? [operand(1), operand(2), operand(0)]
    : [operand(0), operand(1), operand(0)];
  return (p) => exports.conv2d(p[a], p[w], p[bias], p[out], d);
});

for (const op of ['max_pool2d', 'avg_pool2d', 'resize']) {
  registerKernel(op, ({ exports, node, operand, shape, out, desc }) => {
    const d = desc(words(node, [shape(0)]));
    const a = operand(0);
    return (p) => exports[op](p[a], p[out], d);
  });
}
