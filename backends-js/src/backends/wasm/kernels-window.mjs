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

// conv2d's matmul form where a group has at least GEMM_MIN_CHANNELS output channels and the
// columns fit GEMM_MAX_COLS floats of scratch (bench/archive/conv2d.py: 3-17x faster than the
// direct loop for dense convs, slower for depthwise and tiny ones)
const GEMM_MIN_CHANNELS = 16;
const GEMM_MAX_COLS = 1 << 24;

registerKernel('conv2d', ({ exports, node, operand, shape, out, desc, scratch }) => {
  const shapes = node.operands.map((_, k) => shape(k));
  const p = windowParams(node, shapes);
  const d = desc(words(node, shapes));
  const [a, w, bias] = shapes.length === 3 ? [operand(1), operand(2), operand(0)]
    : [operand(0), operand(1), operand(0)];
  const groups = p.c / p.cg;
  const k = p.cg * p.kh * p.kw;
  const pix = p.oh * p.ow;
  const cols = p.n * groups * k * pix;
  if (p.mg < GEMM_MIN_CHANNELS || cols > GEMM_MAX_COLS) {
    return (ptr) => exports.conv2d(ptr[a], ptr[w], ptr[bias], ptr[out], d);
  }
  const pointwise = p.kh === 1 && p.kw === 1 && p.sh === 1 && p.sw === 1 &&
    p.pt + p.pl + p.pb + p.pr === 0;
  scratch((pointwise ? 0 : cols) + exports.matmul_scratch(k, pix));
  const mmScratch = (pointwise ? 0 : cols) * 4;
  return (ptr, s) => {
    const src = pointwise ? ptr[a] : s;
    if (!pointwise) exports.im2col(ptr[a], s, d);
    for (let n = 0; n < p.n; n++) {
      for (let g = 0; g < groups; g++) {
        exports.matmul(ptr[w] + g * p.mg * k * 4, src + (n * groups + g) * k * pix * 4,
          ptr[out] + (n * p.m + g * p.mg) * pix * 4, p.mg, k, pix, k, 1, pix, 1, s + mmScratch);
      }
    }
    if (shapes.length === 3) addBias(exports.memory, ptr[out], ptr[bias], p.n, p.m, pix);
  };
});

/** out[n, m, :] += bias[m], one float32 addition each (the direct kernel's last step). */
function addBias(memory, outAt, biasAt, n, m, pix) {
  const o = new Float32Array(memory.buffer, outAt, n * m * pix);
  const b = new Float32Array(memory.buffer, biasAt, m);
  for (let i = 0; i < o.length; i++) o[i] += b[Math.floor(i / pix) % m];
}

for (const op of ['max_pool2d', 'avg_pool2d', 'resize']) {
  registerKernel(op, ({ exports, node, operand, shape, out, desc }) => {
    const d = desc(words(node, [shape(0)]));
    const a = operand(0);
    return (p) => exports[op](p[a], p[out], d);
  });
}
