// Reductions and the softmax family, all in the protocol's 64-lane order (reduce.glsl).
import { registerKernel, sizeOf } from './registry.mjs';

const LANES = 64;
/** Rows longer than this reduce in two passes (64 fragments per row, then the tree). */
const SPLIT_LEN = 1024;

/**
 * @typedef {{outer: number, len: number, inner: number}} RowView  a tensor seen as [outer, len, inner]
 */

/** @param {number[]} shape @param {number|null} axis */
function rowView(shape, axis) {
  if (axis === null || axis === undefined) return { outer: 1, len: sizeOf(shape), inner: 1 };
  return { outer: sizeOf(shape.slice(0, axis)), len: shape[axis], inner: sizeOf(shape.slice(axis + 1)) };
}

/**
 * Passes that reduce every row of `view` into `target` (one element per row).
 * @param {import('./registry.mjs').KernelContext} k
 * @param {{view: RowView, inputs: Record<string, number>, defines?: Record<string, number>,
 *   epilogue?: Record<string, number>, div?: number, target: number}} r
 */
function reduceRows(k, { view, inputs, defines = {}, epilogue = {}, div = 1, target }) {
  const rows = view.outer * view.inner;
  const uniforms = { u_len: ['i', view.len], u_inner: ['i', view.inner], u_div: ['f', div] };
  if (view.len <= SPLIT_LEN) {
    // rows of at most 64 elements: one element per lane, the tree spelled out (reduce.glsl)
    const short = view.len <= LANES && k.options.shortRows !== false ? { SHORT_LEN: view.len } : {};
    return [{ shader: 'reduce.glsl', defines: { STAGE_FUSED: 1, ...short, ...defines, ...epilogue },
      inputs, uniforms, target }];
  }
  const partials = k.temp(rows * LANES);
  const combine = defines.COMBINE_MAX ? { COMBINE_MAX: 1 } : {};
  return [
    { shader: 'reduce.glsl', defines: { STAGE_LANES: 1, ...defines }, inputs, uniforms, target: partials },
    { shader: 'reduce.glsl', defines: { STAGE_TREE: 1, ...combine, ...epilogue },
      inputs: { u_p: partials }, uniforms, target },
  ];
}

for (const op of ['sum', 'mean']) {
  registerKernel(op, (node, k) => {
    const a = node.operands[0];
    const view = rowView(k.shape(a), node.attrs.axis);
    return reduceRows(k, {
      view, inputs: { u_a: k.slot(a) }, target: k.out,
      epilogue: op === 'mean' ? { EPI_div: 1 } : {}, div: view.len,
    });
  });
}

/**
 * Per-row max m and sum of exp(a - m) of `a` into two scratch tensors.
 * @param {import('./registry.mjs').KernelContext} k @param {number} a @param {RowView} view
 */
function rowStats(k, a, view) {
  // shared: cross_entropy and cross_entropy_grad of the same logits need the same two
  const key = `rowstats:${a}:${view.outer}:${view.len}:${view.inner}`;
  const { value: [m, s], passes } = k.shared(key, (alloc) => {
    const rows = view.outer * view.inner;
    const [mm, ss] = [alloc(rows), alloc(rows)];
    return { value: [mm, ss], passes: [
      ...reduceRows(k, { view, inputs: { u_a: k.slot(a) }, defines: { COMBINE_MAX: 1 }, target: mm }),
      ...reduceRows(k, { view, inputs: { u_a: k.slot(a), u_m: mm }, defines: { TERM_expdiff: 1 },
        target: ss }),
    ] };
  });
  return { m, s, passes: [...passes] };
}

/**
 * @param {string} op rowwise.glsl's OP_ name
 * @param {any} node @param {import('./registry.mjs').KernelContext} k @param {RowView} view
 */
function rowwise(op, node, k, view) {
  const a = node.operands[0];
  const { m, s, passes } = rowStats(k, a, view);
  const inputs = { u_a: k.slot(a), u_m: m, u_s: s };
  if (op === 'cross_entropy_grad') inputs.u_b = k.slot(node.operands[1]);
  passes.push({
    shader: 'rowwise.glsl', defines: { [`OP_${op}`]: 1 }, inputs, target: k.out,
    uniforms: { u_len: ['i', view.len], u_inner: ['i', view.inner], u_div: ['f', view.outer] },
  });
  return passes;
}

for (const op of ['softmax', 'log_softmax']) {
  registerKernel(op, (node, k) => rowwise(op, node, k, rowView(node.shape, node.attrs.axis)));
}

// (softmax(a) - b) / N over rows of [N, C].
registerKernel('cross_entropy_grad', (node, k) => rowwise('cross_entropy_grad', node, k,
  rowView(node.shape, 1)));

// -(sum over rows of sum_c b * log_softmax(a)) / N: each row in the 64-lane order over classes,
// then the rows in that order.
registerKernel('cross_entropy', (node, k) => {
  const [a, b] = node.operands;
  const [rows] = k.shape(a);
  const view = rowView(k.shape(a), 1);
  const { m, s, passes } = rowStats(k, a, view);
  const perRow = k.temp(rows);
  passes.push(...reduceRows(k, {
    view, inputs: { u_a: k.slot(a), u_b: k.slot(b), u_m: m, u_s: s },
    defines: { TERM_ce: 1 }, target: perRow,
  }));
  passes.push(...reduceRows(k, {
    view: { outer: 1, len: rows, inner: 1 }, inputs: { u_a: perRow },
    epilogue: { EPI_negdiv: 1 }, div: rows, target: k.out,
  }));
  return passes;
});
