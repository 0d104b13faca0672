// Rank 5 to 8 on kernels of rank 4 (docs/protocol.md "Rank 5 to 8"): before a backend prepares
// a graph, every node with a tensor of rank > 4 is rewritten, where its op allows, to the same
// op over *coalesced* views of its tensors (adjacent axes that every operand reads alike merged
// into one, axes of size 1 dropped, as ORT and TF.js do), with reshapes between views. The
// elements and their order are the same (row-major), so every kernel runs as it does at rank
// <= 4 and gives the same bits.
// What coalesces: elementwise ops (broadcast axes that broadcast alike), reductions and softmax
// ([before, axis, after]), transpose and matmul batch axes, permute (axes that stay adjacent),
// slice and slice_scatter (an axis of step 1 followed by whole axes), pad (axes without padding
// join the one before), index_select / index_add / concat ([before, axis, after]), gather /
// scatter_add (axes where idx spans a), inputs, full, hash_uniform and reshape (flat). A node
// whose views stay past rank 4 (a permute of five scattered axes, say) is kept at its rank: a
// backend whose kernel has no such rank refuses it by name (UNSUPPORTED), the CPU ones run it.
// Tensors of a dtype no lane reshapes (bool, uint32) keep their own shape.
// Twin of pylib/gpulab/lowering_rank.py (a test compares them on the corpus).
import { opSpec } from './optable.mjs';
import { sliceIndices } from './shapes-select.mjs';

/**
 * @typedef {import('./validate.mjs').CheckedGraph} CheckedGraph
 * @typedef {import('./validate.mjs').CheckedNode} CheckedNode
 * @typedef {number[]} Shape
 * @typedef {{views: (Shape|null)[], attrs: Record<string, any>, shape: Shape}} Plan
 *   a node rewritten: its operands' views (null: as the operand is), attrs, its result's view
 */

/** The rank every kernel handles (protocol versions 1 to 7): kernels.mjs DEFAULT_MAX_RANK. */
export const KERNEL_RANK = 4;
/** The dtypes every lane's reshape takes (a view or a copy of 32-bit words). */
export const RESHAPE_DTYPES = ['float32', 'int32'];

const numel = (/** @type {number[]} */ s) => s.reduce((p, d) => p * d, 1);
const same = (/** @type {Shape} */ a, /** @type {Shape} */ b) =>
  a.length === b.length && a.every((d, i) => d === b[i]);

/** Leading 1s dropped: the same operand under right-aligned broadcasting. @param {Shape} s */
function trim(s) {
  let k = 0;
  while (k < s.length && s[k] === 1) k++;
  return s.slice(k);
}

/**
 * Out and operand shapes (broadcasting to out) with adjacent axes merged where every operand
 * either spans both or broadcasts both, and axes of size 1 dropped; operands right-aligned with
 * their leading 1s dropped. A `fixed` operand (one no reshape takes) keeps the axes it spans
 * apart.
 * @param {Shape} out @param {Shape[]} shapes @param {boolean[]} [fixed]
 * @returns {{out: Shape, views: Shape[]}}
 */
export function coalesceBroadcast(out, shapes, fixed = []) {
  const aligned = shapes.map((s) => [...Array(out.length - s.length).fill(1), ...s]);
  /** @type {Shape} */
  const mergedOut = [];
  /** @type {Shape[]} */
  const merged = shapes.map(() => []);
  let lastKind = null;
  out.forEach((n, d) => {
    if (n === 1) return;
    const spans = aligned.map((s) => s[d] === n);
    // an axis joins the one before where every operand reads both alike
    const kind = spans.map((a, k) => (a && fixed[k] ? `own${d}` : String(a))).join(',');
    if (kind === lastKind) {
      mergedOut[mergedOut.length - 1] *= n;
      merged.forEach((m, k) => { m[m.length - 1] *= spans[k] ? n : 1; });
    } else {
      mergedOut.push(n);
      merged.forEach((m, k) => m.push(spans[k] ? n : 1));
      lastKind = kind;
    }
  });
  return { out: mergedOut, views: merged.map(trim) };
}

/** [before, axis, after]: the axes before and after `axis` merged. @param {Shape} s @param {number} axis */
const around = (s, axis) => [numel(s.slice(0, axis)), s[axis], numel(s.slice(axis + 1))];
const flat = (/** @type {Shape} */ s) => [numel(s)];

/**
 * Axes in runs: axis d joins the run before it when joins(d, run).
 * @param {number[]} axes @param {(d: number, run: number[]) => boolean} joins @returns {number[][]}
 */
function groups(axes, joins) {
  /** @type {number[][]} */
  const runs = [];
  for (const d of axes) {
    if (runs.length > 0 && joins(d, runs[runs.length - 1])) runs[runs.length - 1].push(d);
    else runs.push([d]);
  }
  return runs;
}

const range = (/** @type {number} */ n) => [...Array(n).keys()];

/**
 * Operands of the result's shape read flat alike; the others (a counter, adam's t) as they
 * are; broadcasting ops coalesced.
 * @param {CheckedNode} node @param {Shape[]} shapes @param {boolean[]} movable @returns {Plan|null}
 */
function elementwise(node, shapes, movable) {
  const rule = opSpec(node.op).shape_rule;
  if (rule === 'broadcast' || rule === 'broadcast3') {
    const { out, views } = coalesceBroadcast(node.shape, shapes, movable.map((m) => !m));
    return { views, attrs: node.attrs, shape: out };
  }
  const f = flat(node.shape);
  return { views: shapes.map((s) => (same(s, node.shape) ? f : s)), attrs: node.attrs, shape: f };
}

/**
 * The view of a, its slices and the result's view: an axis of size 1 joins the run before it,
 * a whole axis joins a run whose first axis has step 1 (the elements stay contiguous).
 * @param {Shape} a @param {(number|null)[][]} slices
 */
function sliceRuns(a, slices) {
  const entries = a.map((n, d) => {
    const { start, step, count } = sliceIndices(slices[d], n);
    return [n, start, count, step];
  });
  const whole = entries.map(([n, s, c, t]) => n === 1 || (s === 0 && c === n && t === 1));
  const runs = groups(range(a.length), (d, run) => a[d] === 1 || (whole[d] && entries[run[0]][3] === 1));
  const view = [];
  const out = [];
  const normal = [];
  for (const run of runs) {
    const [n, start, count] = entries[run[0]];
    const inner = numel(run.slice(1).map((d) => a[d]));
    view.push(n * inner);
    out.push(count * inner);
    // past its first axis a run holds whole axes: with a step of 1, one contiguous block
    normal.push(inner === 1 ? [...slices[run[0]]] : [start * inner, (start + count) * inner, 1]);
  }
  return { view, slices: normal, out };
}

/**
 * gather, scatter_add: an axis joins the one before it (on the same side of `axis`) where idx
 * spans a along it; axes of size 1 in a dropped.
 * @param {CheckedNode} node @param {Shape[]} shapes @returns {Plan|null}
 */
function indexElements(node, shapes) {
  const [a, idx] = shapes;
  const { axis } = node.attrs;
  const kept = range(a.length).filter((d) => d === axis || a[d] !== 1);
  const runs = groups(range(kept.length),
    (k) => kept[k] !== axis && kept[k - 1] !== axis && idx[kept[k]] === a[kept[k]]);
  const va = runs.map((run) => numel(run.map((k) => a[kept[k]])));
  const vi = runs.map((run) => numel(run.map((k) => idx[kept[k]])));
  if (va.length > KERNEL_RANK) return null;
  const newAxis = runs.findIndex((run) => kept[run[0]] === axis);
  const views = shapes.length > 2 ? [va, vi, vi] : [va, vi];
  return { views, attrs: { ...node.attrs, axis: newAxis }, shape: node.op === 'scatter_add' ? va : vi };
}

/** @type {Record<string, (node: CheckedNode, shapes: Shape[], movable: boolean[]) => Plan|null>} */
const PLANS = {
  from_attr: (node, shapes) => ({ views: shapes, attrs: { ...node.attrs, shape: flat(node.shape) },
    shape: flat(node.shape) }),
  counter_shape: (node, shapes) => PLANS.from_attr(node, shapes, []),
  same: elementwise,
  same_ab: elementwise,
  same_counter: elementwise,
  adam_update: elementwise,
  broadcast: elementwise,
  broadcast3: elementwise,
  reshape(node) {
    const out = node.shape.length <= KERNEL_RANK ? node.shape : flat(node.shape);
    return { views: [null], attrs: { ...node.attrs, shape: out }, shape: out };
  },
  reduce(node, [a]) {
    const { axis } = node.attrs;
    if (axis == null) return { views: [flat(a)], attrs: { ...node.attrs, keepdim: false }, shape: [] };
    const view = around(a, axis);
    return { views: [view], attrs: { ...node.attrs, axis: 1, keepdim: false }, shape: [view[0], view[2]] };
  },
  same_axis(node, [a]) {
    const view = around(a, node.attrs.axis);
    return { views: [view], attrs: { ...node.attrs, axis: 1 }, shape: view };
  },
  transpose(node, [a]) {
    const [m, n] = a.slice(-2);
    const batch = numel(a.slice(0, -2));
    return { views: [[batch, m, n]], attrs: node.attrs, shape: [batch, n, m] };
  },
  matmul(node, [a, b]) {
    const { out, views: [va, vb] } = coalesceBroadcast(node.shape.slice(0, -2),
      [a.slice(0, -2), b.slice(0, -2)]);
    if (out.length + 2 > KERNEL_RANK) return null;
    return { views: [[...va, ...a.slice(-2)], [...vb, ...b.slice(-2)]], attrs: node.attrs,
      shape: [...out, ...node.shape.slice(-2)] };
  },
  matmul_q(node, [a, b]) {
    const batch = numel(a.slice(0, -2));
    return { views: [[batch, ...a.slice(-2)], b], attrs: node.attrs, shape: [batch, ...node.shape.slice(-2)] };
  },
  permute(node, [a]) {
    // axes of size 1 go anywhere: dropped, the others numbered anew
    const kept = range(a.length).filter((d) => a[d] !== 1);
    const dims = node.attrs.dims.filter((d) => a[d] !== 1).map((d) => kept.indexOf(d));
    const runs = groups(range(dims.length), (k) => dims[k] === dims[k - 1] + 1);
    // the runs in input order make the view; the permutation is their order in dims
    const starts = [...runs].sort((r, s) => dims[r[0]] - dims[s[0]]);
    const view = starts.length > 0 ? starts.map((run) => numel(run.map((k) => a[kept[dims[k]]]))) : [1];
    const perm = runs.length > 0 ? runs.map((run) => starts.indexOf(run)) : [0];
    if (view.length > KERNEL_RANK) return null;
    return { views: [view], attrs: { ...node.attrs, dims: perm }, shape: perm.map((p) => view[p]) };
  },
  slice(node, [a]) {
    const { view, slices, out } = sliceRuns(a, node.attrs.slices);
    if (view.length > KERNEL_RANK) return null;
    return { views: [view], attrs: { ...node.attrs, slices }, shape: out };
  },
  slice_scatter(node, [a]) {
    const { view, slices, out } = sliceRuns(a, node.attrs.slices);
    if (view.length > KERNEL_RANK) return null;
    return { views: [view, out], attrs: { ...node.attrs, slices }, shape: view };
  },
  pad(node, [a]) {
    const { widths } = node.attrs;
    const runs = groups(range(a.length), (d) => widths[d][0] === 0 && widths[d][1] === 0);
    const view = [];
    const out = [];
    const merged = [];
    for (const run of runs) {
      const inner = numel(run.slice(1).map((d) => a[d]));
      const [before, after] = widths[run[0]];
      view.push(a[run[0]] * inner);
      merged.push([before * inner, after * inner]);
      out.push((a[run[0]] + before + after) * inner);
    }
    if (view.length > KERNEL_RANK) return null;
    return { views: [view], attrs: { ...node.attrs, widths: merged }, shape: out };
  },
  // index_select, index_add: a as [before, axis, after], idx as it is, src alike
  index_select(node, shapes) {
    const { axis } = node.attrs;
    const views = [around(shapes[0], axis), shapes[1]];
    if (shapes.length > 2) views.push(around(shapes[2], axis));
    return { views, attrs: { ...node.attrs, axis: 1 }, shape: around(node.shape, axis) };
  },
  index_add: (node, shapes, movable) => PLANS.index_select(node, shapes, movable),
  concat(node, shapes) {
    const { axis } = node.attrs;
    return { views: shapes.map((s) => around(s, axis)), attrs: { ...node.attrs, axis: 1 },
      shape: around(node.shape, axis) };
  },
  gather: indexElements,
  scatter_add: indexElements,
};

/**
 * The graph with every node of rank > 4 on coalesced views where its op allows, or null when
 * no tensor has rank > 4.
 * @param {CheckedGraph} checked @returns {CheckedGraph|null}
 */
export function lowerRank(checked) {
  const { byId } = checked;
  if (!checked.nodes.some((n) => n.shape.length > KERNEL_RANK)) return null;
  let next = checked.nodes.reduce((m, n) => Math.max(m, n.id), 0) + 1;
  /** @type {Map<number, Shape>} the shape each lowered node produces */
  const view = new Map();
  /** @type {Map<string, CheckedNode>} reshapes made: "source:shape" -> node */
  const made = new Map();
  /** @type {Map<number, CheckedNode[]>} */
  const outNodes = new Map();
  const viewOf = (/** @type {number} */ ref) => view.get(ref) ?? byId.get(ref).shape;

  /** @param {number} ref @param {Shape|null} shape @param {CheckedNode[]} into */
  const asView = (ref, shape, into) => {
    if (shape === null || same(viewOf(ref), shape)) return ref;
    const key = `${ref}:${shape.join(',')}`;
    if (!made.has(key)) {
      const node = { id: next++, op: 'reshape', operands: [ref], attrs: { shape: [...shape] },
        shape: [...shape], dtype: byId.get(ref).dtype };
      made.set(key, node);
      into.push(node);
    }
    return made.get(key).id;
  };

  /** No tensor of a dtype that no reshape takes needs a view other than its own. */
  const fits = (/** @type {CheckedNode} */ node, /** @type {Plan} */ plan) => {
    // past rank 4 a view is no better than the node as it is
    if ([plan.shape, ...plan.views].some((v) => v !== null && v.length > KERNEL_RANK)) return false;
    if (!RESHAPE_DTYPES.includes(node.dtype) && !same(plan.shape, node.shape)) return false;
    return node.operands.every((ref, k) => plan.views[k] === null ||
      RESHAPE_DTYPES.includes(byId.get(ref).dtype) || same(plan.views[k], viewOf(ref)));
  };

  for (const id of checked.order) {
    const node = byId.get(id);
    const shapes = node.operands.map((ref) => byId.get(ref).shape);
    const rank = Math.max(node.shape.length, ...shapes.map((s) => s.length));
    /** @type {Plan|null} */
    let plan = null;
    if (rank > KERNEL_RANK) {
      const planner = PLANS[opSpec(node.op).shape_rule];
      const movable = node.operands.map((ref) => RESHAPE_DTYPES.includes(byId.get(ref).dtype));
      plan = planner ? planner(node, shapes, movable) : null;
      if (plan && !fits(node, plan)) plan = null;
    }
    // as it is: operands in their own shapes
    plan ??= { views: shapes, attrs: node.attrs, shape: node.shape };
    /** @type {CheckedNode[]} */
    const before = [];
    const operands = node.operands.map((ref, k) => asView(ref, plan.views[k], before));
    view.set(id, plan.shape);
    if (operands.every((ref, k) => ref === node.operands[k]) && plan.attrs === node.attrs &&
      same(plan.shape, node.shape)) continue;
    outNodes.set(id, [...before, { ...node, operands, attrs: plan.attrs, shape: plan.shape }]);
  }
  if (outNodes.size === 0) return null;
  const expand = (/** @type {CheckedNode} */ n) => outNodes.get(n.id) ?? [n];
  const nodes = checked.nodes.flatMap(expand);
  const order = checked.order.flatMap((id) => expand(byId.get(id)).map((n) => n.id));
  return { ...checked, nodes, order, byId: new Map(nodes.map((n) => [n.id, n])) };
}
