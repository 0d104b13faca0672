// The planner's rules for the protocol-v6 window ops (conv2d, max_pool2d,
// avg_pool2d, resize), twin of pylib/gpulab/native/planner_window.py (e2e/test_plans_equal.py
// compares the plans). Each op is one dispatch of kernels/wgsl/window.wgsl, one invocation
// per output element (OP: 0 conv2d, 1 max_pool2d, 2 avg_pool2d, 3 resize nearest, 4 resize
// linear) with the bindings [a, w, bias, out]; an op without a weight or a bias binds a there.
import { COORD_MODES, NEAREST_MODES, windowParams } from './conv-geometry.mjs';

export const WINDOW_WG = 64;
const QNAN = 0x7fc00000;

/**
 * conv2d as a batched matmul (planner.mjs decides when): groups, output channels per group,
 * K = cg * kh * kw, P = oh * ow, the column count, and whether a is its own column matrix (a
 * 1x1 kernel, strides 1, no padding).
 * @param {any} node @param {number[][]} shapes
 */
export function convGemm(node, shapes) {
  const p = windowParams(node, shapes);
  const groups = p.c / p.cg;
  const k = p.cg * p.kh * p.kw;
  const pix = p.oh * p.ow;
  const pointwise = p.kh === 1 && p.kw === 1 && p.sh === 1 && p.sw === 1 &&
    p.pt + p.pl + p.pb + p.pr === 0;
  return { n: p.n, groups, mg: p.mg, k, pix, cols: p.n * groups * k * pix, pointwise, hasBias: p.hasBias };
}

/**
 * One window.wgsl pass of conv2d's matmul form: OP 5 writes the columns into `target`, OP 6
 * adds the bias into `target` (the matmul's output). @param {any} ctx @param {any} node
 * @param {5|6} op @param {number} target @param {number} count the elements it writes
 */
export function planConvPass(ctx, node, op, target, count) {
  const shapes = node.operands.map((_, k) => ctx.operandShape(node, k));
  const p = windowParams(node, shapes);
  const ops = node.operands.map((_, k) => ctx.operand(node, k));
  const [a, w, bias] = ops.length === 3 ? [ops[1], ops[2], ops[0]] : [ops[0], ops[1], ops[0]];
  const params = [count, p.n, p.c, p.h, p.w, p.m, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw,
    p.pt, p.pl, p.pb, p.pr, p.cg, p.mg, 0, 0, 0, QNAN]
    .map((v) => /** @type {[string, number]} */ (['u32', v]));
  const [ra, rw, rb] = op === 6 ? [bias, bias, bias] : [a, w, a];
  ctx.dispatch(node, 'window', { WG: WINDOW_WG, OP: op, HAS_BIAS: 0 }, params,
    [ra, rw, rb, target], Math.ceil(count / WINDOW_WG));
}

/** @param {any} ctx @param {any} node */
function planWindow(ctx, node) {
  const shapes = node.operands.map((_, k) => ctx.operandShape(node, k));
  const resize = node.op === 'resize';
  const p = resize ? resizeParams(node, shapes[0]) : windowParams(node, shapes);
  const n = node.shape.reduce((x, y) => x * y, 1);
  const { attrs } = node;
  const op = { conv2d: 0, max_pool2d: 1, avg_pool2d: 2 }[node.op] ??
    (attrs.mode === 'linear' ? 4 : 3);
  const params = [
    n, p.n, p.c, p.h, p.w, p.m, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl,
    p.pb, p.pr, p.cg, p.mg, attrs.count_include_pad ? 1 : 0,
    resize ? COORD_MODES.indexOf(attrs.coordinate_transformation_mode) : 0,
    resize ? NEAREST_MODES.indexOf(attrs.nearest_mode) : 0, QNAN,
  ].map((v) => /** @type {[string, number]} */ (['u32', v]));
  const ops = node.operands.map((_, k) => ctx.operand(node, k));
  const [a, w, bias] = node.op !== 'conv2d' ? [ops[0], ops[0], ops[0]]
    : ops.length === 3 ? [ops[1], ops[2], ops[0]] : [ops[0], ops[1], ops[0]];
  const overrides = { WG: WINDOW_WG, OP: op, HAS_BIAS: p.hasBias ? 1 : 0 };
  ctx.dispatch(node, 'window', overrides, params, [a, w, bias, ctx.output(node)],
    Math.ceil(n / WINDOW_WG));
}

/** resize's integers in windowParams' names (no window: ones and zeros). */
function resizeParams(node, [n, c, h, w]) {
  return {
    n, c, h, w, m: c, oh: node.shape[2], ow: node.shape[3], kh: 1, kw: 1, sh: 1, sw: 1, dh: 1,
    dw: 1, pt: 0, pl: 0, pb: 0, pr: 0, cg: 1, mg: 1, hasBias: false,
  };
}

export const WINDOW_RULES = {
  conv2d: planWindow, max_pool2d: planWindow, avg_pool2d: planWindow, resize: planWindow,
};
