// Matmul epilogue fusion (docs/plan.md "Fusion"): a map2 node folded into the dispatch
// of the matmul whose product it reads.
//
// A map2 node whose op the kernel table marks `epilogue` (add, sub, mul: one rounding, no helper)
// folds into the matmul dispatch when one operand is a matmul that nothing else reads and that
// is no output, of the node's shape, and the other operand has the node's shape, or is one row
// [N] (or [1, N], ...: a bias) broadcast down the rows, one value, or one column [M, 1]. The map1
// ops map fusion already folded into that node (its other operand's PRE, its POST) come along.
// The matmul kernels apply the op to the finished ascending-k sum (pylib/gpulab/codegen/epilogue.py), so
// the bits are those of the two dispatches. The matmul node then has no buffer. Twin of
// pylib/gpulab/native/planner_epilogue.py.

import { epilogueMap2, familyCodes } from './kernel-table.mjs';

/** op -> binary.wgsl OP code of the map2 ops a matmul kernel applies to its finished sum */
export const EPILOGUE_MAP2 = epilogueMap2();
const UNARY_OP = familyCodes('map1');

/**
 * @typedef {import('./planner.mjs').CheckedNode} CheckedNode
 * @typedef {{matmul: CheckedNode, side: number, bcast: number}} Epilogue
 *   side 0: the product is the map2's operand a, 1: its operand b; bcast (the other operand):
 *   0 the result's shape, 1 one row [N], 2 one value, 3 one column [M, 1]
 */

/**
 * map2 node id -> its Epilogue, over the graph's order (after map fusion).
 * @param {any} ctx the planner's PlanContext
 * @returns {Map<number, Epilogue>}
 */
export function findEpilogues(ctx) {
  /** @type {Map<number, Epilogue>} */
  const found = new Map();
  for (const id of ctx.checked.order) {
    const x = ctx.node(id);
    if (!(x.op in EPILOGUE_MAP2) || ctx.adamParts.has(x.id) || (x.dtype || 'float32') !== 'float32') {
      continue;
    }
    const e = epilogueOf(ctx, x);
    if (e) found.set(x.id, e);
  }
  return found;
}

/** @param {any} ctx @param {CheckedNode} x @returns {Epilogue|null} */
function epilogueOf(ctx, x) {
  for (const side of [0, 1]) {
    const mm = ctx.node(x.operands[side]);
    const other = x.operands[1 - side];
    const users = (ctx.consumers.get(mm.id) ?? []).map((/** @type {CheckedNode} */ c) => c.id);
    if (mm.op !== 'matmul' || other === mm.id || users.length !== 1 || users[0] !== x.id ||
      ctx.outputIds.has(mm.id) || !sameShape(mm.shape, x.shape)) continue;
    const bcast = bcastOf(ctx.node(other).shape, x.shape);
    if (bcast !== null) return { matmul: mm, side, bcast };
  }
  return null;
}

/** @param {number[]} a @param {number[]} b */
function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * How the other operand is read (kernels' EPI_BCAST): 0 the result's shape; after leading 1s,
 * 1 a row [N] read at every row, 2 one value, 3 a column [M, 1]; else null.
 * @param {number[]} shape @param {number[]} result
 */
function bcastOf(shape, result) {
  if (sameShape(shape, result)) return 0;
  if (shape.length > result.length) return null;
  const full = [...new Array(result.length - shape.length).fill(1), ...shape];
  const r = full.length;
  const ones = full.slice(0, -2).every((d) => d === 1);
  if (ones && full[r - 2] === 1 && full[r - 1] === result[r - 1]) return 1;
  if (ones && full[r - 2] === 1 && full[r - 1] === 1) return 2;
  if (ones && full[r - 2] === result[r - 2] && full[r - 1] === 1) return 3;
  return null;
}

/**
 * The epilogue of conv2d's matmul (planner.mjs planConv2d) that adds its bias per output channel
 * (`EPI_BCAST` 4: row r of batch matrix bi reads bias[(bi % groups) * M/G + r]), in place of
 * window.wgsl's OP 6 pass over the result: the same float32 add of the finished sum. {} when
 * there is no bias, or the add is not an epilogue op. Twin of planner_epilogue.py conv_bias.
 * @param {boolean} hasBias @returns {Record<string, number>}
 */
export function convBias(hasBias) {
  if (!hasBias || !('add' in EPILOGUE_MAP2)) return {};
  return { EPI_OP: 1 + EPILOGUE_MAP2.add, EPI_SIDE: 0, EPI_BCAST: 4 };
}

/**
 * The matmul's dispatch (kernel, params, its a and b, workgroups: planner.mjs matmulStep) with
 * x's op, its other operand c (or the operand of its folded PRE) and its POST.
 * @param {any} ctx @param {CheckedNode} x @param {Epilogue} e
 * @param {{kernel: string, params: any[], reads: number[], groups: number}} step
 */
export function planEpilogue(ctx, x, e, step) {
  const fused = ctx.mapFused.get(x.id) ?? {};
  const pre = fused[e.side === 0 ? 'PRE_B' : 'PRE_A'];
  const post = fused.POST;
  const c = pre ? ctx.bufferOf.get(pre.operands[0]) : ctx.operand(x, 1 - e.side);
  /** @type {Record<string, number>} */
  const overrides = { EPI_OP: 1 + EPILOGUE_MAP2[x.op], EPI_SIDE: e.side, EPI_BCAST: e.bcast };
  if (pre) overrides.EPI_PRE = 1 + UNARY_OP[pre.op];
  if (post) overrides.EPI_POST = 1 + UNARY_OP[post.op];
  const out = ctx.output(post ?? x);
  ctx.dispatch(x, step.kernel, overrides, step.params, [...step.reads, c, out], step.groups);
}
