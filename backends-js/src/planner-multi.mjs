// Multi-node dispatches, twin of pylib/gpulab/native/planner_multi.py
// (e2e/test_plans_equal.py compares the plans; docs/plan.md "Fusion"):
// - multi-tensor Adam: the adam_step-fused parameter updates (planner.mjs `adamFused`) that
//   share a step counter t and do not depend on each other are grouped, in graph order, into
//   ONE `adam_multiK` dispatch (pylib/gpulab/codegen/adam_multi.py) of at most MULTI_ADAM_MAX parameters
//   and as many as the device's storage-buffer limit allows (7 per parameter + t; WebGPU's
//   default 8 allows one: no grouping). The group runs where its last member is planned; a
//   parameter joins only while no node planned between the group's first member and it reads
//   a member's results, so nothing reads a value before the group's dispatch writes it.
// - the cross-entropy pair: a cross_entropy and a cross_entropy_grad of the same logits and
//   targets are one `cross_entropy_pair` dispatch (the per-row values and the gradient),
//   planned where the later of the two is, then cross_entropy's mean as before; paired only
//   while no node between the two reads the earlier one's value.
// Both compute every element with the expressions, and every row statistic in the 64-lane
// order, of the separate dispatches: the bits do not change.

export const MULTI_ADAM_MAX = 8; // pylib/gpulab/codegen/adam_multi.py SIZES ends here
const ADAM_STORAGE = 7; // storage bindings per parameter: m, v, g, w read; m', v', w' written
const ELEMENTWISE_WG = 64;
/** What the planners group (a test empties it for the unfused plan; Python: MULTI_FUSIONS). */
export const MULTI_FUSIONS = new Set(['adam_multi', 'cross_entropy_pair']);

/**
 * Set ctx.adamGroups (last member id -> the member updates, in order), ctx.adamGrouped (every
 * member id), ctx.cePairs (node id -> its partner, both ways) and ctx.ceLast.
 * @param {any} ctx the planner's PlanContext
 */
export function findMulti(ctx) {
  /** @type {Map<number, any[]>} */ ctx.adamGroups = new Map();
  /** @type {Set<number>} */ ctx.adamGrouped = new Set();
  /** @type {Map<number, number>} */ ctx.cePairs = new Map();
  /** @type {Set<number>} the later node of each pair: it dispatches */ ctx.ceLast = new Set();
  /** @type {Map<number, number>} a paired cross_entropy -> its scratch */ ctx.ceScratch = new Map();
  /** @type {Map<number, number>} */
  const position = new Map(ctx.checked.order.map((/** @type {number} */ id, /** @type {number} */ i) => [id, i]));
  for (const group of MULTI_FUSIONS.has('adam_multi') ? adamGroups(ctx, position) : []) {
    ctx.adamGroups.set(group[group.length - 1].id, group);
    for (const u of group) ctx.adamGrouped.add(u.id);
  }
  if (MULTI_FUSIONS.has('cross_entropy_pair')) findPairs(ctx, position);
}

/**
 * How many parameters one multi-tensor Adam dispatch may take on this device.
 * @param {Record<string, number>} limits
 */
export function adamSlots(limits) {
  return Math.min(MULTI_ADAM_MAX, Math.floor((limits.maxStorageBuffersPerShaderStage - 1) / ADAM_STORAGE));
}

/** @param {any} ctx @param {Map<number, number>} position @returns {any[][]} */
function adamGroups(ctx, position) {
  const slots = adamSlots(ctx.limits);
  /** @type {any[][]} */
  const groups = [];
  /** @type {any[]} */
  let current = [];
  for (const id of ctx.checked.order) {
    if (!ctx.adamFused.has(id)) continue;
    const u = ctx.node(id);
    if (current.length && (current.length >= slots || u.operands[3] !== current[0].operands[3] ||
        adamConflict(ctx, position, current, u))) {
      groups.push(current);
      current = [];
    }
    current.push(u);
  }
  groups.push(current);
  return groups.filter((g) => g.length > 1);
}

/**
 * Whether a node planned up to u (or u's own moments) reads a group member's m', v' or w':
 * those would run before the group's dispatch writes them.
 * @param {any} ctx @param {Map<number, number>} position @param {any[]} group @param {any} u
 */
function adamConflict(ctx, position, group, u) {
  const members = new Set(group.flatMap((g) => [g, ...ctx.adamFused.get(g.id)]).map((x) => x.id));
  const [m, v] = ctx.adamFused.get(u.id);
  const order = ctx.checked.order;
  const between = order.slice(/** @type {number} */ (position.get(group[0].id)) + 1,
    /** @type {number} */ (position.get(u.id)) + 1);
  for (const id of [...between, m.id, v.id]) {
    if (members.has(id)) continue;
    let reads = ctx.node(id).operands;
    if (id === u.id) reads = reads.filter((/** @type {number} */ r) => r !== m.id && r !== v.id);
    if (reads.some((/** @type {number} */ r) => members.has(r))) return true;
  }
  return false;
}

/** @param {any} ctx @param {Map<number, number>} position */
function findPairs(ctx, position) {
  const order = ctx.checked.order;
  const grads = order.map((/** @type {number} */ i) => ctx.node(i))
    .filter((/** @type {any} */ n) => n.op === 'cross_entropy_grad');
  for (const id of order) {
    const c = ctx.node(id);
    if (c.op !== 'cross_entropy') continue;
    for (const g of grads) {
      if (ctx.cePairs.has(g.id) || g.operands.length !== c.operands.length ||
          g.operands.some((/** @type {number} */ x, /** @type {number} */ i) => x !== c.operands[i])) continue;
      const [first, last] = [c, g].sort((x, y) => position.get(x.id) - position.get(y.id));
      const between = order.slice(position.get(first.id) + 1, position.get(last.id));
      if (between.some((/** @type {number} */ i) => ctx.node(i).operands.includes(first.id))) continue;
      ctx.cePairs.set(c.id, g.id);
      ctx.cePairs.set(g.id, c.id);
      ctx.ceLast.add(last.id);
      break;
    }
  }
}

/**
 * Plan a paired cross_entropy / cross_entropy_grad (false: not paired). The earlier of the
 * two only allocates its buffers; the later one dispatches both, then the mean.
 * @param {any} ctx @param {any} node @param {(...v: number[]) => any[]} u32s
 * @param {number} reduceMean reduce.wgsl's OP of mean
 */
export function planCrossEntropyPair(ctx, node, u32s, reduceMean) {
  if (!ctx.cePairs.has(node.id)) return false;
  const c = node.op === 'cross_entropy' ? node : ctx.node(ctx.cePairs.get(node.id));
  const g = ctx.node(ctx.cePairs.get(c.id));
  const [rows, classes] = ctx.operandShape(c, 0);
  if (node === c) ctx.ceScratch.set(c.id, ctx.allocate(c, rows, 'temp'));
  ctx.output(node);
  if (!ctx.ceLast.has(node.id)) return true;
  const a = ctx.operand(c, 0);
  const b = ctx.operand(c, 1);
  const scratch = ctx.ceScratch.get(c.id);
  ctx.dispatch(node, 'cross_entropy_pair', {}, u32s(classes, 1, rows, 0),
    [a, b, scratch, ctx.bufferOf.get(g.id)], rows, 2);
  ctx.dispatch(c, 'reduce', { OP: reduceMean }, u32s(rows, 1, 1, 0), [scratch, ctx.bufferOf.get(c.id)], 1);
  return true;
}

/**
 * Plan a grouped adam_update (false: not grouped): its buffer now; the group's one dispatch
 * at its last member.
 * @param {any} ctx @param {any} node
 */
export function planAdamMulti(ctx, node) {
  if (!ctx.adamGrouped.has(node.id)) return false;
  ctx.output(node);
  const group = ctx.adamGroups.get(node.id);
  if (!group) return true;
  const buf = (/** @type {number} */ id) => /** @type {number} */ (ctx.bufferOf.get(id));
  /** @type {any[]} */ const params = [];
  /** @type {number[]} */ const reads = [];
  /** @type {number[]} */ const writes = [];
  let start = 0;
  for (const u of group) {
    const [m, v] = ctx.adamFused.get(u.id);
    const n = u.shape.reduce((/** @type {number} */ x, /** @type {number} */ d) => x * d, 1);
    const { lr, beta1, beta2, eps } = u.attrs;
    params.push(['u32', n], ['u32', start], ...[lr, beta1, beta2, eps].map((x) => ['f32', Number(x)]),
      ['f32', Number(m.attrs.beta1)], ['f32', Number(v.attrs.beta2)]);
    reads.push(buf(m.operands[0]), buf(v.operands[0]), buf(m.operands[1]), buf(u.operands[0]));
    writes.push(buf(m.id), buf(v.id), buf(u.id));
    start += Math.ceil(n / ELEMENTWISE_WG);
  }
  ctx.dispatch(node, `adam_multi${group.length}`, { WG: ELEMENTWISE_WG }, params,
    [buf(group[0].operands[3]), ...reads, ...writes], start, writes.length);
  return true;
}
