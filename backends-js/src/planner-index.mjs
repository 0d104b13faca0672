// The planner's rules for the protocol-v4 selection ops, twin of
// pylib/gpulab/native/planner_index.py (e2e/test_plans_equal.py compares the plans). Every op is
// one or more passes of kernels/wgsl/index.wgsl (OP override: 0 read, 1 write, 2 fill, 3 gather,
// 4 add) with the bindings [a, idx, src, out, err]; a pass without an index or a source binds a
// there. `err` is the plan's check buffer (kind 'check', one word per index op: the smallest
// position of an index out of range, 0xffffffff none); the plan lists `checks: [{node, word}]`
// and the programs reset the words before a run and read them back after it.
export const INDEX_WG = 64;
const PASS = { read: 0, write: 1, fill: 2, gather: 3, add: 4 };
const INDEX_OPS = new Set(['index_select', 'gather', 'index_add', 'scatter_add']);
const V4_OPS = ['slice', 'slice_scatter', 'concat', 'pad', ...INDEX_OPS];
// ops with a check word: the index ops and dequantize_rows (quant.wgsl)
const CHECKED_OPS = new Set([...INDEX_OPS, 'dequantize_rows']);

/** @param {number[]} shape */
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/** Row-major strides. @param {number[]} shape */
function strides(shape) {
  const s = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** Left-padded to rank 4 with `fill`. @param {number[]} v @param {number} fill */
const pad4 = (v, fill) => [...new Array(4 - v.length).fill(fill), ...v];

/** A u32 word of an integer (negative values as their two's complement bits). */
const word = (/** @type {number} */ v) => /** @type {[string, number]} */ (['u32', v >>> 0]);

/**
 * The check buffer (allocated at the first node that binds it) and, for an index op or
 * dequantize_rows, its word.
 * @param {any} ctx @param {any} node
 */
export function checkBuffer(ctx, node) {
  if (ctx.checkBuffer === undefined) {
    const slots = ctx.checked.order.filter((id) => CHECKED_OPS.has(ctx.node(id).op)).length;
    ctx.checkBuffer = ctx.allocate(node, Math.max(4, slots), 'check');
  }
  let slot = 0;
  if (CHECKED_OPS.has(node.op)) {
    slot = ctx.checks.length;
    ctx.checks.push({ node: node.id, word: slot });
  }
  return { buffer: ctx.checkBuffer, slot };
}

/**
 * One pass of index.wgsl over `domain` (its element count is the dispatch size).
 * @param {any} ctx @param {any} node @param {keyof PASS} pass
 * @param {{domain: number[], a: number, idx?: number, src?: number, out: number,
 *   base?: number, axis?: number, size?: number, s?: number[], t?: number[], u?: number[],
 *   lim?: number[], value?: number, tbase?: number, m?: number}} o
 */
function pass(ctx, node, name, o) {
  const rank = o.domain.length;
  const { buffer, slot } = checkBuffer(ctx, node);
  const n = count(o.domain);
  const vec = (/** @type {number[]|undefined} */ v) => pad4(v ?? new Array(rank).fill(0), 0).map(word);
  const params = [
    word(n), word(o.base ?? 0), word((o.axis ?? 0) + 4 - rank), word(o.size ?? 0),
    ...pad4(o.domain, 1).map(word), ...vec(o.s), ...vec(o.t), ...vec(o.u),
    ...pad4(o.lim ?? o.domain, 1).map(word),
    word(o.value ?? 0), word(o.tbase ?? 0), word(slot), word(o.m ?? 0),
  ];
  const overrides = { WG: INDEX_WG, OP: PASS[name], FLOAT: node.dtype === 'float32' ? 1 : 0 };
  ctx.dispatch(node, 'index', overrides, params,
    [o.a, o.idx ?? o.a, o.src ?? o.a, o.out, buffer], Math.ceil(n / INDEX_WG), 2);
}

/** The start offset and per-axis strides of a normalized slice of a tensor `shape`. */
function sliceWalk(shape, slices) {
  const st = strides(shape);
  const base = slices.reduce((acc, [start], k) => acc + start * st[k], 0);
  return { base, steps: slices.map(([, , step], k) => step * st[k]) };
}

/** The bits a pad writes: float32 as f32, int32 as its two's complement word. */
function padWord(node) {
  if (node.dtype !== 'float32') return node.attrs.value >>> 0;
  return new Uint32Array(new Float32Array([node.attrs.value]).buffer)[0];
}

/** @param {any} ctx @param {any} node */
function planSlice(ctx, node) {
  const { base, steps } = sliceWalk(ctx.operandShape(node, 0), node.attrs.slices);
  const a = ctx.operand(node, 0);
  pass(ctx, node, 'read', { domain: node.shape, a, out: ctx.output(node), base, s: steps });
}

/** @param {any} ctx @param {any} node */
function planSliceScatter(ctx, node) {
  const [a, src] = [ctx.operand(node, 0), ctx.operand(node, 1)];
  const out = ctx.output(node);
  pass(ctx, node, 'read', { domain: node.shape, a, out, s: strides(node.shape) });
  const { base, steps } = sliceWalk(node.shape, node.attrs.slices);
  pass(ctx, node, 'write', { domain: ctx.operandShape(node, 1), a: src, out, tbase: base, t: steps });
}

/** @param {any} ctx @param {any} node */
function planConcat(ctx, node) {
  const out = ctx.output(node);
  const st = strides(node.shape);
  let start = 0;
  node.operands.forEach((_, k) => {
    const shape = ctx.operandShape(node, k);
    pass(ctx, node, 'write', { domain: shape, a: ctx.operand(node, k), out, tbase: start * st[node.attrs.axis], t: st });
    start += shape[node.attrs.axis];
  });
}

/** @param {any} ctx @param {any} node */
function planPad(ctx, node) {
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  const st = strides(node.shape);
  pass(ctx, node, 'fill', { domain: node.shape, a, out, value: padWord(node) });
  const tbase = node.attrs.widths.reduce((acc, [before], k) => acc + before * st[k], 0);
  pass(ctx, node, 'write', { domain: ctx.operandShape(node, 0), a, out, tbase, t: st });
}

/** index_select (idx read at c[axis]) and gather (idx read at c). @param {any} ctx @param {any} node */
function planGather(ctx, node) {
  const shape = ctx.operandShape(node, 0);
  const { axis } = node.attrs;
  const t = node.op === 'gather' ? strides(node.shape) : node.shape.map((_, k) => (k === axis ? 1 : 0));
  pass(ctx, node, 'gather', { domain: node.shape, a: ctx.operand(node, 0), idx: ctx.operand(node, 1),
    out: ctx.output(node), axis, size: shape[axis], s: strides(shape), t });
}

/** index_add and scatter_add: one invocation per output element. @param {any} ctx @param {any} node */
function planAccumulate(ctx, node) {
  const { axis } = node.attrs;
  const idxShape = ctx.operandShape(node, 1);
  const srcShape = ctx.operandShape(node, 2);
  const flat = node.op === 'index_add';
  const t = flat ? node.shape.map((_, k) => (k === axis ? 1 : 0)) : strides(idxShape);
  const lim = flat ? node.shape.map((d, k) => (k === axis ? idxShape[0] : d)) : idxShape;
  pass(ctx, node, 'add', { domain: node.shape, a: ctx.operand(node, 0), idx: ctx.operand(node, 1),
    src: ctx.operand(node, 2), out: ctx.output(node), axis, size: node.shape[axis],
    t, u: strides(srcShape), lim, m: flat ? idxShape[0] : idxShape[axis] });
}

export const INDEX_RULES = {
  slice: planSlice, slice_scatter: planSliceScatter, concat: planConcat, pad: planPad,
  index_select: planGather, gather: planGather, index_add: planAccumulate, scatter_add: planAccumulate,
};
// reshape (a view, or a copy of words) at int32 too: basic indexing t[..., 0] reshapes
export const INDEX_DTYPES = Object.fromEntries([...V4_OPS, 'reshape'].map((op) => [op, ['float32', 'int32']]));
