// Shape rules of the protocol-v6 window ops (conv2d, max_pool2d, avg_pool2d, resize):
// docs/protocol.md "The v6 window ops". Twin of pylib/gpulab/shapes_conv.py, message for
// message. shapes.mjs spreads CONV_RULES into its table. The window geometry (windowAxis) is
// also what every backend's kernel reads, so a kernel never recomputes an output size.
import { nodeError } from './errors.mjs';
import { LIMITS } from './optable.mjs';

/** @typedef {number[]} Shape */
/** @typedef {{node: {id: number, op: string}, shapes: Shape[], attrs: Record<string, any>}} RuleContext */

const AXES = ['H', 'W'];

/** @param {Shape} shape */
const fmt = (shape) => `[${shape.join(', ')}]`;

/** @param {RuleContext} ctx @param {string} detail */
const fail = (ctx, detail) => nodeError('VALIDATION', ctx.node, detail);

/** @param {Shape} s */
const numel = (s) => s.reduce((p, d) => p * d, 1);

/** @param {RuleContext} ctx @param {string} name @param {Shape} s */
function requireNchw(ctx, name, s) {
  if (s.length !== 4) {
    throw fail(ctx, `operand ${name} must be [N, C, H, W] (rank 4), got ${name} ${fmt(s)}`);
  }
  // N or C may be 0 (an empty result); a window over an empty plane has nothing to read
  if (s[2] === 0 || s[3] === 0) {
    throw fail(ctx, `operand ${name} ${fmt(s)} has an empty plane (H and W must be >= 1)`);
  }
}

/**
 * One spatial axis of a windowed op: the output count, or a VALIDATION message.
 * size n, kernel k, stride s, dilation d, padding before/after; ceil: ceil_mode (a last window
 * starting past the input and the leading padding is dropped, as torch).
 * @returns {{out: number} | {problem: string}}
 */
export function windowAxis(n, k, s, d, before, after, ceil = false) {
  const extent = d * (k - 1) + 1;
  const padded = n + before + after;
  if (padded < extent) {
    return { problem: `the kernel spans ${extent} (kernel ${k}, dilation ${d}), more than the ` +
      `padded input's ${padded} (${n} + padding ${before} + ${after})` };
  }
  const span = padded - extent;
  let out = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (ceil && (out - 1) * s >= n + before) out -= 1;
  return { out };
}

/**
 * The first window (output index) whose taps all miss the input, or -1: only windows starting
 * in the leading padding can (a window starting inside the input holds its first tap).
 */
function emptyWindow(n, k, s, d, before, out) {
  for (let o = 0; o < out; o++) {
    const start = o * s - before;
    if (start >= 0) return -1;
    const j = Math.ceil(-start / d); // the first tap at or past 0
    if (j >= k || start + j * d >= n) return o;
  }
  return -1;
}

/**
 * The two spatial output sizes of a windowed op on a [N, C, H, W], or VALIDATION naming the
 * axis. @param {RuleContext} ctx @param {Shape} a @param {number[]} kernel
 */
function windowOut(ctx, a, kernel, { pooling = false } = {}) {
  const { strides, dilations, padding } = ctx.attrs;
  return [0, 1].map((i) => {
    const n = a[2 + i];
    const before = padding[i];
    const after = padding[2 + i];
    const r = windowAxis(n, kernel[i], strides[i], dilations[i], before, after,
      pooling && ctx.attrs.ceil_mode);
    if ('problem' in r) throw fail(ctx, `along ${AXES[i]} of a ${fmt(a)}: ${r.problem}`);
    if (pooling) {
      const o = emptyWindow(n, kernel[i], strides[i], dilations[i], before, r.out);
      if (o >= 0) {
        throw fail(ctx, `along ${AXES[i]} of a ${fmt(a)}: window ${o} (padding ${before}) ` +
          'holds no element of a');
      }
    }
    return r.out;
  });
}

/** LIMIT when one node's multiply-adds (or window taps) pass max_macs_per_node. */
function checkMacs(ctx, out, taps) {
  const macs = numel(out) * taps;
  if (macs > LIMITS.max_macs_per_node) {
    throw nodeError('LIMIT', ctx.node, `${macs} multiply-adds (${numel(out)} results x ${taps} ` +
      `taps), more than max_macs_per_node ${LIMITS.max_macs_per_node}`);
  }
}

/**
 * Taps per result element of a window op (the cost model's and the MAC limit's K): conv2d
 * C/groups x kH x kW, the pools kH x kW, resize 4 (linear) or 1.
 * @param {string} op @param {Shape[]} shapes @param {Record<string, any>} attrs
 */
export function windowTaps(op, shapes, attrs) {
  if (op === 'conv2d') {
    const w = shapes[shapes.length - 1];
    return w[1] * w[2] * w[3];
  }
  if (op === 'resize') return attrs.mode === 'linear' ? 4 : 1;
  return attrs.kernel[0] * attrs.kernel[1];
}

/** @type {Record<string, (ctx: RuleContext) => Shape>} */
export const CONV_RULES = {
  conv2d(ctx) {
    const hasBias = ctx.shapes.length === 3;
    const [a, w] = ctx.shapes.slice(hasBias ? 1 : 0);
    requireNchw(ctx, 'a', a);
    if (w.length !== 4) {
      throw fail(ctx, `operand w must be [M, C / groups, kH, kW] (rank 4), got w ${fmt(w)}`);
    }
    if (w[2] === 0 || w[3] === 0) throw fail(ctx, `operand w ${fmt(w)} has an empty kernel (kH and kW must be >= 1)`);
    const { groups } = ctx.attrs;
    if (a[1] % groups !== 0) {
      throw fail(ctx, `groups ${groups} does not divide a ${fmt(a)}'s ${a[1]} channels`);
    }
    if (w[0] % groups !== 0) {
      throw fail(ctx, `groups ${groups} does not divide w ${fmt(w)}'s ${w[0]} output channels`);
    }
    if (w[1] * groups !== a[1]) {
      throw fail(ctx, `operand w ${fmt(w)} takes ${w[1]} input channels per group; a ` +
        `${fmt(a)} with groups ${groups} has ${a[1] / groups}`);
    }
    if (hasBias && (ctx.shapes[0].length !== 1 || ctx.shapes[0][0] !== w[0])) {
      throw fail(ctx, `operand bias[0] must be [${w[0]}] (one per output channel of w ` +
        `${fmt(w)}), got ${fmt(ctx.shapes[0])}`);
    }
    const out = [a[0], w[0], ...windowOut(ctx, a, [w[2], w[3]])];
    if (a[1] === 0 && numel(out) > 0) {
      throw fail(ctx, `a ${fmt(a)} has no input channel: each result would sum no element`);
    }
    checkMacs(ctx, out, w[1] * w[2] * w[3]);
    return out;
  },

  pool2d(ctx) {
    const a = ctx.shapes[0];
    requireNchw(ctx, 'a', a);
    const out = [a[0], a[1], ...windowOut(ctx, a, ctx.attrs.kernel, { pooling: true })];
    checkMacs(ctx, out, ctx.attrs.kernel[0] * ctx.attrs.kernel[1]);
    return out;
  },

  resize(ctx) {
    const a = ctx.shapes[0];
    requireNchw(ctx, 'a', a);
    const { size } = ctx.attrs;
    [0, 1].forEach((i) => {
      // the coordinate maps are exact 32-bit integer arithmetic (docs/protocol.md)
      if ((a[2 + i] + 1) * size[i] > LIMITS.max_resize_product) {
        throw nodeError('LIMIT', ctx.node, `along ${AXES[i]}: (${a[2 + i]} + 1) x ${size[i]} ` +
          `is more than max_resize_product ${LIMITS.max_resize_product}`);
      }
    });
    return [a[0], a[1], size[0], size[1]];
  },
};
