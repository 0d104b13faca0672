// What every backend is spared (docs/protocol.md "Zero-size tensors"): the runtime lowers a
// checked graph before a backend prepares it, so no kernel ever sees
// - a zero-size tensor: every empty node is dropped (its value is an empty typed array, answered
//   here, never by a device: WebGPU has no zero-size binding), and a node with elements that
//   reads an empty operand is rewritten: to a constant where it reduces over no element (the
//   op table's `over_empty`: sum 0, mean NaN, matmul with K = 0 zeros, cross_entropy NaN; pad
//   of an empty a is all `value`), to a copy where the empty operand adds nothing (concat drops
//   it; slice_scatter, index_add, scatter_add with nothing to write give a);
// - an axis on a rank-0 tensor (PyTorch's dim=0 / dim=-1 of a scalar): softmax, log_softmax and
//   the index ops run on the element reshaped to [1], then back to []; a reduction over it is
//   one over all (axis null); slice, slice_scatter, pad and permute of a rank-0 tensor are
//   copies.
// A graph with neither is returned as it is. Twin of pylib/gpulab/lowering.py (a test compares
// them on the corpus).
import { GpuLabError } from './errors.mjs';
import { opSpec } from './optable.mjs';
import { allocTyped } from './dtypes.mjs';
import { lowerRank } from './lowering-rank.mjs';

/**
 * @typedef {import('./validate.mjs').CheckedGraph} CheckedGraph
 * @typedef {import('./validate.mjs').CheckedNode} CheckedNode
 * @typedef {{checked: CheckedGraph, empty: Map<number, string>}} Lowered
 *   empty: id -> dtype of every dropped (zero-size) node
 */

const isEmpty = (/** @type {number[]} */ shape) => shape.includes(0);

// ops that read an axis of operand a: on a rank-0 a they run on a [1] view of it
const AXIS_OPS = new Set(['softmax', 'log_softmax', 'index_select', 'gather', 'index_add',
  'scatter_add']);
// ops that are copies on a rank-0 tensor: the operand whose value the result is
const RANK0_COPY = { slice: 0, pad: 0, permute: 0, slice_scatter: 1 };

/** A reduction over axis 0 of a rank-0 tensor. @param {CheckedNode} node @param {Map<number, CheckedNode>} byId */
const isRank0Reduce = (node, byId) => opSpec(node.op).shape_rule === 'reduce' &&
  node.attrs.axis !== null && byId.get(node.operands[0]).shape.length === 0;

/** @param {CheckedNode} node @param {Map<number, CheckedNode>} byId */
function rank0Kind(node, byId) {
  if (isRank0Reduce(node, byId)) return node.op;
  if (!(AXIS_OPS.has(node.op) || Object.hasOwn(RANK0_COPY, node.op))) return null;
  return byId.get(node.operands[0]).shape.length === 0 ? node.op : null;
}

/** The words of `over_empty` ("0", "nan") or pad's value, as the node's dtype. */
function constant(node, value) {
  const data = allocTyped(node.dtype, node.shape.reduce((p, d) => p * d, 1));
  data.fill(value);
  return { id: node.id, op: 'input', operands: [], attrs: { shape: [...node.shape], dtype: node.dtype },
    shape: [...node.shape], dtype: node.dtype, data };
}

/** A copy of `from` (same shape and dtype) under the node's id: a reshape to its own shape. */
function copyOf(node, from) {
  return { id: node.id, op: 'reshape', operands: [from], attrs: { shape: [...node.shape] },
    shape: [...node.shape], dtype: node.dtype };
}

/**
 * A node with elements that reads an empty operand, rewritten (one node, same id).
 * @param {CheckedNode} node @param {Map<number, CheckedNode>} byId
 */
function overEmpty(node, byId) {
  const empty = (/** @type {number} */ ref) => isEmpty(byId.get(ref).shape);
  const rule = opSpec(node.op).over_empty;
  if (rule === '0' || rule === 'nan') return constant(node, rule === 'nan' ? NaN : 0);
  if (node.op === 'pad') return constant(node, node.attrs.value);
  if (node.op === 'concat') {
    const kept = node.operands.filter((ref) => !empty(ref));
    return kept.length === 1 ? copyOf(node, kept[0]) : { ...node, operands: kept };
  }
  if (['slice_scatter', 'index_add', 'scatter_add'].includes(node.op)) {
    return copyOf(node, node.operands[0]);
  }
  // the validator refuses every other way to compute elements from nothing
  throw new GpuLabError('BACKEND', `node ${node.id} (${node.op}): no lowering for a result ` +
    `[${node.shape.join(', ')}] over an empty operand`, node.id);
}

/**
 * The nodes that replace a rank-0 node (same id last).
 * @param {CheckedNode} node @param {Map<number, CheckedNode>} byId @param {() => number} fresh
 */
function overRank0(node, byId, fresh) {
  if (isRank0Reduce(node, byId)) return [{ ...node, attrs: { ...node.attrs, axis: null } }];
  if (Object.hasOwn(RANK0_COPY, node.op)) return [copyOf(node, node.operands[RANK0_COPY[node.op]])];
  const made = [];
  const asVector = (/** @type {number} */ ref) => {
    const from = byId.get(ref);
    if (from.shape.length === 1) return ref;
    const id = fresh();
    made.push({ id, op: 'reshape', operands: [ref], attrs: { shape: [1] }, shape: [1], dtype: from.dtype });
    return id;
  };
  const operands = node.operands.map(asVector);
  const inner = fresh();
  made.push({ ...node, id: inner, operands, attrs: { ...node.attrs, axis: 0 }, shape: [1] });
  made.push({ id: node.id, op: 'reshape', operands: [inner], attrs: { shape: [] }, shape: [],
    dtype: node.dtype });
  return made;
}

/**
 * The graph a backend runs, or null when `checked` needs no lowering: zero-size tensors and
 * rank-0 axes first, then ranks past 4 (lowering-rank.mjs).
 * @param {CheckedGraph} checked @returns {Lowered|null}
 */
export function lowerGraph(checked) {
  const first = lowerEmpty(checked);
  const ranked = lowerRank(first ? first.checked : checked);
  if (!ranked) return first;
  return { checked: ranked, empty: first ? first.empty : new Map() };
}

/** The graph a backend's kernels see (what `supports` judges). @param {CheckedGraph} checked */
export function loweredChecked(checked) {
  return lowerGraph(checked)?.checked ?? checked;
}

/**
 * Zero-size tensors and rank-0 axes lowered, or null when the graph has neither.
 * @param {CheckedGraph} checked @returns {Lowered|null}
 */
function lowerEmpty(checked) {
  const { byId } = checked;
  const needs = checked.nodes.some((n) => isEmpty(n.shape) || rank0Kind(n, byId));
  if (!needs) return null;
  let next = Math.max(...checked.nodes.map((n) => n.id)) + 1;
  const fresh = () => next++;
  /** @type {Map<number, string>} */
  const empty = new Map();
  /** @type {Map<number, CheckedNode[]>} id -> its replacement nodes, in order */
  const replaced = new Map();
  for (const node of checked.nodes) {
    if (isEmpty(node.shape)) {
      empty.set(node.id, node.dtype);
    } else if (node.operands.some((ref) => isEmpty(byId.get(ref).shape))) {
      replaced.set(node.id, [overEmpty(node, byId)]);
    } else if (rank0Kind(node, byId)) {
      replaced.set(node.id, overRank0(node, byId, fresh));
    }
  }
  const expand = (/** @type {CheckedNode} */ n) => replaced.get(n.id) ?? [n];
  const nodes = checked.nodes.filter((n) => !empty.has(n.id)).flatMap(expand);
  const order = checked.order.filter((id) => !empty.has(id))
    .flatMap((id) => expand(byId.get(id)).map((n) => n.id));
  const outputs = checked.outputs.filter((o) => !empty.has(o.id));
  const lowered = { ...checked, nodes, order, outputs, byId: new Map(nodes.map((n) => [n.id, n])) };
  return { checked: lowered, empty };
}

/**
 * A backend program over the lowered graph (or none, when every output is empty) that answers
 * the empty nodes itself. Other properties (a presenter's surface) come from the inner program.
 * @param {any} inner @param {Map<number, string>} empty
 */
function loweredProgram(inner, empty) {
  const emptyValue = (/** @type {number} */ id) => allocTyped(empty.get(id), 0);
  const program = Object.create(inner ?? {});
  program.run = async (/** @type {Map<number, any>[]} */ steps, /** @type {number[]} */ readIds) => {
    const values = new Map();
    if (inner) {
      const fed = steps.map((m) => new Map([...m].filter(([id]) => !empty.has(id))));
      const read = await inner.run(fed, readIds.filter((id) => !empty.has(id)));
      for (const [id, v] of read) values.set(id, v);
    }
    for (const id of readIds) if (empty.has(id)) values.set(id, emptyValue(id));
    return values;
  };
  program.download = async (/** @type {number} */ id) => (empty.has(id) ? emptyValue(id)
    : inner.download(id));
  program.dispose = () => inner?.dispose();
  return program;
}

/**
 * `backend.prepare` of the lowered graph: what the runtime calls (execute and sessions alike).
 * @param {{prepare: Function}} backend @param {CheckedGraph} checked
 * @param {{feeds: number[], carry: Map<number, number>, keep: number[]}} options
 */
export async function prepareLowered(backend, checked, { feeds, carry, keep }) {
  const lowered = lowerGraph(checked);
  if (!lowered) return backend.prepare(checked, { feeds, carry, keep });
  const { empty } = lowered;
  const inner = lowered.checked.outputs.length === 0 ? null
    : await backend.prepare(lowered.checked, {
      feeds: feeds.filter((id) => !empty.has(id)),
      carry: new Map([...carry].filter(([id]) => !empty.has(id))),
      keep: keep.filter((id) => !empty.has(id)),
    });
  return loweredProgram(inner, empty);
}
