// The geometry of the protocol-v6 window ops that every JS backend shares (docs/protocol.md
// "The v6 window ops"): conv2d's operands in order, each window op's parameters as plain
// integers, and resize's source coordinates as exact integer fractions num / den (the Python
// twin: pylib/gpulab/cpu/conv_ops.py source_fraction / nearest_index / linear_taps; the WGSL,
// GLSL and Rust kernels compute the same integers per element).

/** The modes of resize as the small integer codes the GPU and wasm kernels take. */
export const COORD_MODES = ['half_pixel', 'asymmetric', 'align_corners', 'pytorch_half_pixel'];
export const NEAREST_MODES = ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'];

/**
 * conv2d's operands: the variadic bias list comes first (docs/protocol.md), then a, w.
 * @template T @param {T[]} list @returns {{bias: T|null, a: T, w: T}}
 */
export function convOperands(list) {
  return list.length === 3 ? { bias: list[0], a: list[1], w: list[2] }
    : { bias: null, a: list[0], w: list[1] };
}

/**
 * A window op's integers: input [n, c, h, w], output [oh, ow], kernel, strides, dilations,
 * padding (top, left, bottom, right); conv2d adds m (output channels) and cg (channels per
 * group), mg (output channels per group).
 * @param {{op: string, shape: number[], attrs: Record<string, any>}} node
 * @param {number[][]} inShapes the operand shapes in node order
 */
export function windowParams(node, inShapes) {
  const conv = node.op === 'conv2d';
  const { a, w } = conv ? convOperands(inShapes) : { a: inShapes[0], w: null };
  const { strides, dilations, padding } = node.attrs;
  const kernel = conv ? [w[2], w[3]] : node.attrs.kernel;
  const groups = conv ? node.attrs.groups : 1;
  return {
    n: a[0], c: a[1], h: a[2], w: a[3], oh: node.shape[2], ow: node.shape[3],
    kh: kernel[0], kw: kernel[1], sh: strides[0], sw: strides[1], dh: dilations[0],
    dw: dilations[1], pt: padding[0], pl: padding[1], pb: padding[2], pr: padding[3],
    m: conv ? w[0] : a[1], cg: conv ? w[1] : 1, mg: conv ? w[0] / groups : 1,
    hasBias: conv && inShapes.length === 3,
  };
}

/**
 * resize's source coordinate of output index x along an axis (in -> out) as num / den.
 * @param {string} mode @param {number} x @param {number} inSize @param {number} outSize
 */
export function sourceFraction(mode, x, inSize, outSize) {
  if (mode === 'asymmetric') return [x * inSize, outSize];
  if (mode === 'align_corners' || (mode === 'pytorch_half_pixel' && outSize === 1)) {
    return outSize === 1 ? [0, 1] : [x * (inSize - 1), outSize - 1];
  }
  return [(2 * x + 1) * inSize - outSize, 2 * outSize]; // half_pixel
}

// floor(num / den) for integers below 2^31: the float64 quotient is never within 2^-53 of
// the next integer, so Math.floor is exact
const floorDiv = (num, den) => Math.floor(num / den);

/** nearest_mode's rounding of num / den, clamped to 0..inSize-1. */
export function nearestIndex(num, den, rounding, inSize) {
  let i;
  if (rounding === 'floor') i = floorDiv(num, den);
  else if (rounding === 'ceil') i = -floorDiv(-num, den);
  else if (rounding === 'round_prefer_ceil') i = floorDiv(2 * num + den, 2 * den);
  else i = -floorDiv(den - 2 * num, 2 * den); // round_prefer_floor: ceil(num / den - 1/2)
  return Math.min(Math.max(i, 0), inSize - 1);
}

/**
 * linear's two source indices (clamped to the edge) and float32 weights: w1 =
 * float32(r) / float32(den) with r = num - floor(num / den) * den, w0 = 1 - w1.
 */
export function linearTaps(num, den, inSize) {
  const i0 = floorDiv(num, den);
  const w1 = Math.fround(Math.fround(num - i0 * den) / Math.fround(den));
  const clamp = (i) => Math.min(Math.max(i, 0), inSize - 1);
  return { i0: clamp(i0), i1: clamp(i0 + 1), w0: Math.fround(1 - w1), w1 };
}
