// The GPU plan: how a checked graph becomes buffers, uploads and WGSL dispatches.
//
// Twin of pylib/gpulab/native/planner.py: both must produce the SAME plan (deep-equal JSON) for
// every graph, which e2e/test_plans_equal.py checks, so the browser WebGPU backend and the native
// wgpu-py executor run identical dispatches of identical WGSL. The format is in docs/plan.md.
// Per-op rules live in a registry keyed by op name (RULES below), not in a switch.

import { GpuLabError, nodeError } from './errors.mjs';
import { BLOCK_DTYPES, DTYPE_NAMES, blockOf, storedLength } from './dtypes.mjs';
import {
  familyCodes, familyKernel, familyOps, fusableMap1, langDtypes, scalarAttrs,
} from './kernel-table.mjs';
import { clampWords, DTYPE_CODE } from './clamp-bounds.mjs';
import { dropoutWords } from './hash-uniform.mjs';
import { STUDENT_DTYPES, STUDENT_RULES } from './planner-student.mjs';
import { INDEX_DTYPES, INDEX_RULES, checkBuffer } from './planner-index.mjs';
import { WINDOW_RULES, convGemm, planConvPass } from './planner-window.mjs';
import { convBias, findEpilogues, planEpilogue } from './planner-epilogue.mjs';
import { findMulti, planAdamMulti, planCrossEntropyPair } from './planner-multi.mjs';

export const PLAN_FORMAT = 1;

/**
 * A matmul takes the largest tile (128, then 64) that still gives `minMatmulWorkgroups`
 * workgroups (and is at least half filled along M and N), else the 16x16 matmul_small: on a GPU
 * few big tiles leave most of it idle, so hardware adapters ask for 128. A software adapter (a
 * CPU with a few cores) is busy with any count and runs matmul_small about 3x slower than the
 * 64x64 tile, so its executor passes 1. Every matmul kernel fits 16 KiB of workgroup storage.
 */
export const MATMUL_MIN_WORKGROUPS = 128;
export const MATMUL_MIN_WORKGROUPS_SOFTWARE = 1;

/** WebGPU's default limits (and the hardware matmul rule): what a plan assumes when not given. */
export const DEFAULT_LIMITS = Object.freeze({
  maxComputeWorkgroupStorageSize: 16384,
  maxStorageBufferBindingSize: 134217728,
  maxComputeWorkgroupsPerDimension: 65535,
  minMatmulWorkgroups: MATMUL_MIN_WORKGROUPS,
  maxStorageBuffersPerShaderStage: 8, // planner-multi.mjs: how many Adam updates group
});

/** Workgroup size of elementwise kernels (the `WG` override). */
export const ELEMENTWISE_WG = 64;
// [tile, its kernels by operand alignment]: index 2 * (K % 4 == 0) + (N % 4 == 0). vec4 loads of
// a need K % 4 == 0, vec4 loads of b and stores of out N % 4 == 0 (planner.py MATMUL_KERNELS).
const MATMUL_KERNELS = [
  [128, ['matmul_rb', 'matmul_rb_b4', 'matmul_rb_a4', 'matmul_rb_v4']],
  [64, ['matmul', 'matmul', 'matmul', 'matmul_v4']],
];

// OP codes of the family kernels (unary.wgsl, binary.wgsl, reduce.wgsl) and the float attribute
// a binary op reads as its scalar: from the kernel table, as the native planner reads them.
const UNARY_OP = familyCodes('map1');
const BINARY_OP = familyCodes('map2');
/** map1 ops folded into a map2 dispatch (binary.wgsl PRE_A, PRE_B, POST) */
const FUSABLE_MAP1 = fusableMap1();
const BINARY_SCALAR = scalarAttrs('map2');
const REDUCE_OP = familyCodes('reduce');

/**
 * @typedef {{id: number, op: string, operands: number[], attrs: Record<string, any>,
 *            shape: number[], data?: ArrayLike<number>}} CheckedNode
 * @typedef {{nodes: CheckedNode[], order: number[], outputs: {name: string, id: number}[]}} CheckedGraph
 * @typedef {[('u32'|'f32'), number]} Param
 * @typedef {{node: number, kernel: string, entry: string, overrides: Record<string, number>,
 *            params: Param[], bindings: number[], dispatch: [number, number, number],
 *            writes?: number}} Step
 * @typedef {{id: number, elements: number, node: number, kind: 'input'|'const'|'temp'|'output'|'check'}} PlanBuffer
 * @typedef {{format: number, limits: Record<string, number>, buffers: PlanBuffer[],
 *            values: {node: number, buffer: number, alias: boolean}[],
 *            uploads: {buffer: number, node: number}[], steps: Step[],
 *            outputs: {name: string, node: number, buffer: number, shape: number[]}[],
 *            checks?: {node: number, word: number}[]}} Plan
 */

/**
 * Plan a checked graph for a device with the given limits.
 * @param {CheckedGraph} checked the validator's output
 * @param {Partial<typeof DEFAULT_LIMITS>} [limits] the device's limits (missing keys: defaults)
 * @returns {Plan}
 */
export function planGraph(checked, limits = {}) {
  const ctx = new PlanContext(checked, pickLimits(limits));
  for (const id of checked.order) ctx.planNode(ctx.node(id));
  return ctx.finish();
}

/** @param {Record<string, number>} limits */
function pickLimits(limits) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const [key, fallback] of Object.entries(DEFAULT_LIMITS)) {
    const v = limits[key];
    out[key] = Number.isInteger(v) && v > 0 ? v : fallback;
  }
  return out;
}

class PlanContext {
  /** @param {CheckedGraph} checked @param {Record<string, number>} limits */
  constructor(checked, limits) {
    this.checked = checked;
    this.limits = limits;
    /** @type {Map<number, CheckedNode>} */
    this.byId = new Map(checked.nodes.map((n) => [n.id, n]));
    this.outputIds = new Set(checked.outputs.map((o) => o.id));
    /** @type {PlanBuffer[]} */ this.buffers = [];
    /** @type {Plan['values']} */ this.values = [];
    /** @type {Map<number, number>} node id -> buffer id */ this.bufferOf = new Map();
    /** @type {Plan['uploads']} */ this.uploads = [];
    /** @type {Step[]} */ this.steps = [];
    /** @type {Map<number, CheckedNode[]>} node id -> the planned nodes reading it */
    this.consumers = new Map();
    for (const id of checked.order) {
      const consumer = this.node(id);
      for (const operand of new Set(consumer.operands)) {
        if (!this.consumers.has(operand)) this.consumers.set(operand, []);
        /** @type {CheckedNode[]} */ (this.consumers.get(operand)).push(consumer);
      }
    }
    /** @type {Set<number>} transposes that matmuls read in place */
    this.transposed = new Set();
    /** @type {Map<number, [CheckedNode, CheckedNode]>} adam_update id -> its (adam_m, adam_v) */
    this.adamFused = new Map();
    for (const id of checked.order) this.findAdamStep(this.node(id));
    this.adamParts = new Set([...this.adamFused.values()].flat().map((n) => n.id));
    /** @type {Map<number, Record<string, CheckedNode>>} map2 id -> PRE_A / PRE_B / POST nodes */
    this.mapFused = new Map();
    /** @type {Set<number>} map1 nodes planned inside a map2 dispatch */
    this.mapParts = new Set();
    for (const id of checked.order) this.findMapFusion(this.node(id));
    /** map2 id -> the matmul it folds in (planner-epilogue.mjs) */
    this.epilogues = findEpilogues(this);
    this.epilogueParts = new Set([...this.epilogues.values()].map((e) => e.matmul.id));
    findMulti(this); // multi-tensor Adam, the cross-entropy pair (planner-multi.mjs)
    /** @type {number|undefined} the v4 ops' check buffer (planner-index.mjs) */
    this.checkBuffer = undefined;
    /** @type {{node: number, word: number}[]} */
    this.checks = [];
  }

  /**
   * An adam_update whose moments are an adam_m and an adam_v of the same gradient that nothing
   * else reads (outputs may), all of one shape: one adam_step dispatch does all three.
   * @param {CheckedNode} u
   */
  findAdamStep(u) {
    if (u.op !== 'adam_update') return;
    const m = this.node(u.operands[1]);
    const v = this.node(u.operands[2]);
    if (m.op !== 'adam_m' || v.op !== 'adam_v' || m.operands[1] !== v.operands[1]) return;
    const onlyU = (/** @type {CheckedNode} */ x) => {
      const users = this.consumers.get(x.id) ?? [];
      return users.length === 1 && users[0].id === u.id;
    };
    if (!onlyU(m) || !onlyU(v)) return;
    const ids = [...m.operands, v.operands[0], u.operands[0]];
    const same = (/** @type {number[]} */ s) => s.length === u.shape.length &&
      s.every((d, i) => d === u.shape[i]);
    if (ids.every((i) => same(this.node(i).shape))) this.adamFused.set(u.id, [m, v]);
  }

  /** @param {CheckedNode} u @param {string} dtype */
  fusable(u, dtype) {
    return u.op in FUSABLE_MAP1 && (u.dtype || 'float32') === dtype && !this.mapParts.has(u.id);
  }

  /**
   * A map2 node folds in a fusable map1 operand that nothing else reads and is no output
   * (PRE_A / PRE_B), and its own map1 consumer when that is its only reader and it is no
   * output (POST): the map1 ops only select or change signs, so the bits are those of the
   * separate dispatches (docs/plan.md, Fusion). Twin of planner.py _find_map_fusion.
   * @param {CheckedNode} x
   */
  findMapFusion(x) {
    if (!(x.op in BINARY_OP) || this.adamParts.has(x.id)) return;
    const dtype = x.dtype || 'float32';
    /** @type {Record<string, CheckedNode>} */
    const found = {};
    ['PRE_A', 'PRE_B'].forEach((key, i) => {
      const u = this.node(x.operands[i]);
      const users = (this.consumers.get(u.id) ?? []).map((c) => c.id);
      if (this.fusable(u, dtype) && users.length === 1 && users[0] === x.id &&
        !this.outputIds.has(u.id)) found[key] = u;
    });
    const users = this.consumers.get(x.id) ?? [];
    if (users.length === 1 && !this.outputIds.has(x.id) && this.fusable(users[0], dtype)) {
      found.POST = users[0];
    }
    if (Object.keys(found).length) {
      this.mapFused.set(x.id, found);
      for (const u of Object.values(found)) this.mapParts.add(u.id);
    }
  }

  /** @param {number} id */
  node(id) {
    const n = this.byId.get(id);
    if (!n) throw new GpuLabError('VALIDATION', `plan: node ${id} is not in the checked graph`);
    return n;
  }

  /** @param {CheckedNode} node */
  planNode(node) {
    const rule = RULES[node.op];
    if (!rule) throw nodeError('UNSUPPORTED', node, `no GPU kernel for op "${node.op}"`);
    rule(this, node);
  }

  /**
   * A new buffer for a node's value (or a scratch buffer owned by it).
   * @param {CheckedNode} node @param {number} elements @param {PlanBuffer['kind']} kind
   */
  allocate(node, elements, kind) {
    const bytes = elements * 4;
    const max = this.limits.maxStorageBufferBindingSize;
    if (bytes > max) {
      throw nodeError('LIMIT', node, `needs a ${bytes}-byte buffer; the device allows ${max}`);
    }
    const id = this.buffers.length;
    this.buffers.push({ id, elements, node: node.id, kind });
    return id;
  }

  /** The buffer holding a node's value, allocated now. @param {CheckedNode} node */
  output(node, kind = this.outputIds.has(node.id) ? 'output' : 'temp') {
    const id = this.allocate(node, count(node.shape), /** @type {PlanBuffer['kind']} */ (kind));
    this.bind(node, id, false);
    return id;
  }

  /** @param {CheckedNode} node @param {number} buffer @param {boolean} alias */
  bind(node, buffer, alias) {
    this.bufferOf.set(node.id, buffer);
    this.values.push({ node: node.id, buffer, alias });
    if (alias && this.outputIds.has(node.id) && this.buffers[buffer].kind === 'temp') {
      this.buffers[buffer].kind = 'output';
    }
  }

  /** @param {CheckedNode} node @param {number} i */
  operand(node, i) {
    return /** @type {number} */ (this.bufferOf.get(node.operands[i]));
  }

  /** @param {CheckedNode} node @param {number} i */
  operandShape(node, i) {
    return this.node(node.operands[i]).shape;
  }

  /**
   * Append a dispatch. `kernel` is a WGSL module, or `module:entry` for one of several entry
   * points of a module (rows:softmax); else the entry point is `main`.
   * @param {CheckedNode} node @param {string} kernel @param {Record<string, number>} overrides
   * @param {Param[]} params @param {number[]} bindings @param {number} workgroups
   * @param {number} [writes] how many of the last bindings the dispatch writes
   */
  dispatch(node, kernel, overrides, params, bindings, workgroups, writes = 1) {
    const dispatch = splitDispatch(node, workgroups, this.limits.maxComputeWorkgroupsPerDimension);
    const [module, entry = 'main'] = kernel.split(':');
    /** @type {Step} */
    const step = { node: node.id, kernel: module, entry, overrides, params, bindings, dispatch };
    if (writes !== 1) step.writes = writes; // the last `writes` bindings are written
    this.steps.push(step);
  }

  /** @returns {Plan} */
  finish() {
    const outputs = this.checked.outputs.map((o) => ({
      name: o.name, node: o.id, buffer: /** @type {number} */ (this.bufferOf.get(o.id)),
      shape: [...this.node(o.id).shape],
    }));
    /** @type {Plan} */
    const plan = {
      format: PLAN_FORMAT, limits: { ...this.limits }, buffers: this.buffers, values: this.values,
      uploads: this.uploads, steps: this.steps, outputs,
    };
    // index ops' check words (planner-index.mjs): read back after every run
    if (this.checks.length) plan.checks = this.checks;
    return plan;
  }
}

// ---- helpers shared by the rules (mirrored one for one in planner.py) ----

/** @param {number[]} shape */
function count(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

/** Row-major element strides. @param {number[]} shape */
function contiguousStrides(shape) {
  const strides = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/**
 * Pad a shape (and its strides) on the left to rank 4: new axes have size 1, stride 0.
 * @param {number[]} shape @param {number[]} strides
 */
function padTo4(shape, strides) {
  const pad = 4 - shape.length;
  return {
    shape: [...new Array(pad).fill(1), ...shape],
    strides: [...new Array(pad).fill(0), ...strides],
  };
}

/**
 * Strides of an operand read at the coordinates of a broadcast result (rank 4): size-1 axes
 * and missing leading axes read with stride 0.
 * @param {number[]} shape the operand's shape @param {number} rank the result's rank
 */
function broadcastStrides(shape, rank) {
  const full = [...new Array(rank - shape.length).fill(1), ...shape];
  const strides = contiguousStrides(full).map((s, i) => (full[i] === 1 ? 0 : s));
  return padTo4(full, strides).strides;
}

/**
 * Workgroup counts for `groups` workgroups: x first, then y, then z, each at most `maxDim`.
 * Kernels rebuild the linear index as x + nx * (y + ny * z) and skip the excess.
 * @param {CheckedNode} node @param {number} groups @param {number} maxDim
 * @returns {[number, number, number]}
 */
export function splitDispatch(node, groups, maxDim) {
  if (groups <= maxDim) return [groups, 1, 1];
  const rest = Math.ceil(groups / maxDim);
  if (rest <= maxDim) return [maxDim, rest, 1];
  const z = Math.ceil(rest / maxDim);
  if (z > maxDim) throw nodeError('LIMIT', node, `needs ${groups} workgroups; the device allows ${maxDim}^3`);
  return [maxDim, maxDim, z];
}

/** @param {number} n @returns {Param[]} */
const u32s = (...n) => n.map((v) => /** @type {Param} */ (['u32', v]));

/**
 * Outer/reduced/inner extents of a reduction along `axis` (null: every element in one row).
 * @param {number[]} shape @param {number|null} axis
 */
function reduceExtents(shape, axis) {
  if (axis === null || axis === undefined) return { outer: 1, size: count(shape), inner: 1 };
  return {
    outer: count(shape.slice(0, axis)), size: shape[axis], inner: count(shape.slice(axis + 1)),
  };
}

// ---- the per-op rules ----

/** @typedef {(ctx: PlanContext, node: CheckedNode) => void} Rule */

/** @type {Rule} */
function planInput(ctx, node) {
  const buffer = blockOf(/** @type {any} */ (node).dtype) ? planBlockInput(ctx, node)
    : ctx.output(node, 'input');
  if (node.data !== undefined && node.data !== null) ctx.uploads.push({ buffer, node: node.id });
}

/** @type {Rule} */
function planFull(ctx, node) {
  const buffer = ctx.output(node, 'const');
  ctx.uploads.push({ buffer, node: node.id });
}

/** @type {Rule} */
function planUnary(ctx, node) {
  if (ctx.mapParts.has(node.id)) return; // a map2 dispatch computes it (PRE_*, POST)
  const n = count(node.shape);
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, familyKernel('map1', node.dtype), { WG: ELEMENTWISE_WG, OP: UNARY_OP[node.op] },
    u32s(n),
    [a, out], Math.ceil(n / ELEMENTWISE_WG));
}

/** @type {Rule} */
function planBinary(ctx, node) {
  if (ctx.adamParts.has(node.id)) { // its adam_update's adam_step dispatch writes it
    ctx.output(node);
    return;
  }
  const epilogue = ctx.epilogues.get(node.id);
  if (epilogue) { // the matmul's dispatch computes it (planner-epilogue.mjs)
    planEpilogue(ctx, node, epilogue, matmulStep(ctx, epilogue.matmul));
    return;
  }
  const n = count(node.shape);
  const rank = node.shape.length;
  const sa = ctx.operandShape(node, 0);
  const sb = ctx.operandShape(node, 1);
  const same = sameShape(sa, node.shape) && sameShape(sb, node.shape) ? 1 : 0;
  const out4 = padTo4(node.shape, contiguousStrides(node.shape)).shape;
  const attr = BINARY_SCALAR[node.op];
  const scalar = attr ? Number(node.attrs[attr]) : 0;
  /** @type {Param[]} */
  const params = [
    ...u32s(n, same), ['f32', scalar], ...u32s(0),
    ...u32s(...out4), ...u32s(...broadcastStrides(sa, rank)), ...u32s(...broadcastStrides(sb, rank)),
  ];
  const fused = ctx.mapFused.get(node.id) ?? {};
  /** @type {Record<string, number>} */
  const overrides = { WG: ELEMENTWISE_WG, OP: BINARY_OP[node.op] };
  const reads = ['PRE_A', 'PRE_B'].map((key, i) => {
    const u = fused[key];
    if (!u) return ctx.operand(node, i);
    overrides[key] = 1 + UNARY_OP[u.op];
    return /** @type {number} */ (ctx.bufferOf.get(u.operands[0]));
  });
  const post = fused.POST;
  if (post) overrides.POST = 1 + UNARY_OP[post.op];
  const out = ctx.output(post ?? node);
  ctx.dispatch(node, familyKernel('map2', node.dtype), overrides, params, [...reads, out],
    Math.ceil(n / ELEMENTWISE_WG));
}

/** @param {number[]} a @param {number[]} b */
function sameShape(a, b) {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * A bit-exact strided copy: out[coords] = a[sum coords[i] * srcStrides[i]], coords over `shape`
 * (the result's shape, or [n] for a flat copy).
 * @param {PlanContext} ctx @param {CheckedNode} node @param {number[]} shape
 * @param {number[]} srcStrides one per axis of `shape`
 */
function planCopy(ctx, node, shape, srcStrides) {
  const n = count(node.shape);
  const padded = padTo4(shape, srcStrides);
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, 'permute', { WG: ELEMENTWISE_WG },
    [...u32s(n, 0, 0, 0), ...u32s(...padded.shape), ...u32s(...padded.strides)],
    [a, out], Math.ceil(n / ELEMENTWISE_WG));
}

/** @type {Rule} */
function planPermute(ctx, node) {
  const src = contiguousStrides(ctx.operandShape(node, 0));
  planCopy(ctx, node, node.shape, node.attrs.dims.map((/** @type {number} */ d) => src[d]));
}

/** @type {Rule} */
function planTranspose(ctx, node) {
  // A copy, unless only matmul_small products read it: they read the operand in place (a
  // view, `alias`, and a flag in their params), one dispatch less and the same bits.
  if (readInPlace(ctx, node)) {
    ctx.transposed.add(node.id);
    ctx.bind(node, ctx.operand(node, 0), true);
    return;
  }
  const rank = node.shape.length;
  const src = contiguousStrides(ctx.operandShape(node, 0));
  const dims = [...Array(rank - 2).keys(), rank - 1, rank - 2];
  planCopy(ctx, node, node.shape, dims.map((d) => src[d]));
}

/**
 * reshape is a view: it shares its operand's buffer, except when that buffer is an input's
 * (inputs are fed and carried into; a value aliasing them would change under a carry).
 * @type {Rule}
 */
function planReshape(ctx, node) {
  const a = ctx.operand(node, 0);
  if (ctx.buffers[a].kind === 'input') {
    planCopy(ctx, node, [count(node.shape)], [1]);
    return;
  }
  ctx.bind(node, a, true);
}

/** @type {Rule} */
function planMatmul(ctx, node) {
  if (ctx.epilogueParts.has(node.id)) return; // planned by the map2 node folding it in
  const { kernel, params, reads, groups } = matmulStep(ctx, node);
  const out = ctx.output(node);
  // c (the epilogue's operand, never read without one): a again
  ctx.dispatch(node, kernel, {}, params, [...reads, reads[0], out], groups);
}

/**
 * The kernel, params, [a, b] and workgroups of a matmul's dispatch.
 * @param {PlanContext} ctx @param {CheckedNode} node
 */
function matmulStep(ctx, node) {
  const sa = ctx.operandShape(node, 0);
  const sb = ctx.operandShape(node, 1);
  const m = sa[sa.length - 2];
  const k = sa[sa.length - 1];
  const n = sb[sb.length - 1];
  const batchShape = node.shape.slice(0, -2);
  const batch4 = padTo4([...batchShape, 1, 1], []).shape; // [b0, b1, 1, 1]
  const aStrides = matrixBatchStrides(sa, batchShape.length, m * k);
  const bStrides = matrixBatchStrides(sb, batchShape.length, k * n);
  const batch = batch4[0] * batch4[1];
  const [tile, kernel] = matmulChoice(ctx, node);
  const tilesM = Math.ceil(m / tile);
  const tilesN = Math.ceil(n / tile);
  // bit 0: a is a transpose read in place (a[m, k] at k * M + m), bit 1: likewise b
  const flags = (ctx.transposed.has(node.operands[0]) ? 1 : 0) |
    (ctx.transposed.has(node.operands[1]) ? 2 : 0);
  const params = u32s(m, n, k, tilesM, tilesN, batch, batch4[1], aStrides[0], aStrides[1],
    bStrides[0], bStrides[1], flags);
  const reads = [ctx.operand(node, 0), ctx.operand(node, 1)];
  return { kernel, params, reads, groups: tilesM * tilesN * batch };
}

/**
 * conv2d: im2col (window.wgsl OP 5) + the tiled matmul kernel, w [M, cg, kh, kw] read as
 * [G, M/G, K] against the columns [N, G, K, P] (+ the bias, OP 6), where the product takes a
 * tiled kernel with at least 8 output channels per group; else the direct kernel (depthwise,
 * tiny convs). bench/archive/conv2d.py measured both (docs/protocol.md "The v6 window ops").
 * Twin: native/planner.py _plan_conv2d.
 * @type {Rule}
 */
function planConv2d(ctx, node) {
  const shapes = node.operands.map((_, k) => ctx.operandShape(node, k));
  const g = convGemm(node, shapes);
  const batch = g.n * g.groups;
  const [tile, kernel] = matmulKernel(g.mg, g.pix, g.k, batch, ctx.limits.minMatmulWorkgroups);
  const fits = g.pointwise || g.cols * 4 <= ctx.limits.maxStorageBufferBindingSize;
  if (kernel === 'matmul_small' || g.mg < 8 || !fits) {
    WINDOW_RULES.conv2d(ctx, node);
    return;
  }
  const a = ctx.operand(node, shapes.length - 2);
  const cols = g.pointwise ? a : ctx.allocate(node, g.cols, 'temp');
  if (!g.pointwise) planConvPass(ctx, node, 5, cols, g.cols);
  const out = ctx.output(node);
  const tilesM = Math.ceil(g.mg / tile);
  const tilesN = Math.ceil(g.pix / tile);
  const params = u32s(g.mg, g.pix, g.k, tilesM, tilesN, batch, g.groups, 0, g.mg * g.k,
    g.groups * g.k * g.pix, g.k * g.pix, 0);
  const w = ctx.operand(node, shapes.length - 1);
  const epilogue = convBias(g.hasBias); // the bias added to the finished sums
  const c = Object.keys(epilogue).length ? ctx.operand(node, 0) : w; // else w: never read
  ctx.dispatch(node, kernel, epilogue, params, [w, cols, c, out], tilesM * tilesN * batch);
  if (g.hasBias && !Object.keys(epilogue).length) planConvPass(ctx, node, 6, out, count(node.shape));
}

/**
 * A transpose that is no output and feeds only matmuls that take matmul_small.
 * @param {PlanContext} ctx @param {CheckedNode} node
 */
function readInPlace(ctx, node) {
  const users = ctx.consumers.get(node.id) ?? [];
  return !ctx.outputIds.has(node.id) && users.length > 0 &&
    users.every((u) => u.op === 'matmul' && matmulChoice(ctx, u)[1] === 'matmul_small');
}

/** @param {PlanContext} ctx @param {CheckedNode} node @returns {[number, string]} */
function matmulChoice(ctx, node) {
  const sa = ctx.operandShape(node, 0);
  const sb = ctx.operandShape(node, 1);
  const batch = count(node.shape.slice(0, -2));
  return matmulKernel(sa[sa.length - 2], sb[sb.length - 1], sa[sa.length - 1], batch,
    ctx.limits.minMatmulWorkgroups);
}

/**
 * [tile, kernel] for an [M, K] @ [K, N] product over `batch` matrices: shapes and the plan's
 * `minMatmulWorkgroups` limit (`minGroups`) only, so both planners agree. A kernel reads a as
 * vec4s only if every row of a starts on 16 bytes (K a multiple of 4), b and out only if N is a
 * multiple of 4 (MATMUL_KERNELS).
 * @param {number} m @param {number} n @param {number} k @param {number} batch
 * @param {number} [minGroups]
 * @returns {[number, string]}
 */
export function matmulKernel(m, n, k, batch, minGroups = MATMUL_MIN_WORKGROUPS) {
  for (const [tile, byAlignment] of MATMUL_KERNELS) {
    const groups = Math.ceil(m / tile) * Math.ceil(n / tile) * batch;
    if (2 * m > tile && 2 * n > tile && groups >= minGroups) {
      return [tile, byAlignment[2 * Number(k % 4 === 0) + Number(n % 4 === 0)]];
    }
  }
  return [16, 'matmul_small'];
}

/**
 * Element strides of an operand's two batch axes (padded on the left to 2), 0 where it
 * broadcasts. @param {number[]} shape @param {number} batchRank @param {number} matrix elements
 */
function matrixBatchStrides(shape, batchRank, matrix) {
  const own = shape.slice(0, -2);
  const full = [...new Array(batchRank - own.length).fill(1), ...own];
  const strides = contiguousStrides(full).map((s, i) => (full[i] === 1 ? 0 : s * matrix));
  const two = [...new Array(2 - full.length).fill(0), ...strides];
  return two;
}

/** @type {Rule} */
function planReduce(ctx, node) {
  const { outer, size, inner } = reduceExtents(ctx.operandShape(node, 0), node.attrs.axis);
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, familyKernel('reduce', node.dtype), { OP: REDUCE_OP[node.op] },
    u32s(size, inner, outer * inner, 0), [a, out], outer * inner);
}

/** @type {Rule} */
function planSoftmax(ctx, node) {
  const { outer, size, inner } = reduceExtents(node.shape, node.attrs.axis);
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  const op = node.op === 'log_softmax' ? 1 : 0;
  ctx.dispatch(node, 'rows:softmax', { OP: op }, u32s(size, inner, outer * inner, 0), [a, out], outer * inner);
}

/** cross_entropy: one workgroup per row into a scratch [N], then their mean in lane order. @type {Rule} */
function planCrossEntropy(ctx, node) {
  if (planCrossEntropyPair(ctx, node, u32s, REDUCE_OP.mean)) return;
  const [rows, classes] = ctx.operandShape(node, 0);
  const a = ctx.operand(node, 0);
  const b = ctx.operand(node, 1);
  const scratch = ctx.allocate(node, rows, 'temp');
  const out = ctx.output(node);
  ctx.dispatch(node, 'rows:cross_entropy_rows', {}, u32s(classes, 1, rows, 0), [a, b, scratch], rows);
  ctx.dispatch(node, 'reduce', { OP: REDUCE_OP.mean }, u32s(rows, 1, 1, 0), [scratch, out], 1);
}

/** @type {Rule} */
function planCrossEntropyGrad(ctx, node) {
  if (planCrossEntropyPair(ctx, node, u32s, REDUCE_OP.mean)) return;
  const [rows, classes] = node.shape;
  const a = ctx.operand(node, 0);
  const b = ctx.operand(node, 1);
  const out = ctx.output(node);
  ctx.dispatch(node, 'rows:cross_entropy_grad', {}, u32s(classes, 1, rows, 0), [a, b, out], rows);
}

/** @type {Rule} */
function planAdamUpdate(ctx, node) {
  if (planAdamMulti(ctx, node)) return;
  const fused = ctx.adamFused.get(node.id);
  if (fused) {
    planAdamStep(ctx, node, ...fused);
    return;
  }
  const n = count(node.shape);
  const { lr, beta1, beta2, eps } = node.attrs;
  /** @type {Param[]} */
  const params = [['u32', n], ['f32', Number(lr)], ['f32', Number(beta1)], ['f32', Number(beta2)],
    ['f32', Number(eps)], ...u32s(0, 0, 0)];
  const bindings = [0, 1, 2, 3].map((i) => ctx.operand(node, i));
  const out = ctx.output(node);
  ctx.dispatch(node, 'adam:adam_update', { WG: ELEMENTWISE_WG }, params, [...bindings, out],
    Math.ceil(n / ELEMENTWISE_WG));
}

/**
 * adam_m, adam_v and adam_update in one dispatch writing all three values.
 * @param {PlanContext} ctx @param {CheckedNode} node @param {CheckedNode} m @param {CheckedNode} v
 */
function planAdamStep(ctx, node, m, v) {
  const n = count(node.shape);
  const { lr, beta1, beta2, eps } = node.attrs;
  /** @type {Param[]} */
  const params = [['u32', n], ['f32', Number(lr)], ['f32', Number(beta1)], ['f32', Number(beta2)],
    ['f32', Number(eps)], ['f32', Number(m.attrs.beta1)], ['f32', Number(v.attrs.beta2)],
    ['u32', 0]];
  const buf = (/** @type {number} */ id) => /** @type {number} */ (ctx.bufferOf.get(id));
  const reads = [buf(m.operands[0]), buf(v.operands[0]), buf(m.operands[1]), ctx.operand(node, 0),
    ctx.operand(node, 3)];
  const out = ctx.output(node);
  ctx.dispatch(node, 'adam:adam_step', { WG: ELEMENTWISE_WG }, params,
    [...reads, buf(m.id), buf(v.id), out], Math.ceil(n / ELEMENTWISE_WG), 3);
}

/** @type {Rule} */
function planLife(ctx, node) {
  const [h, w] = node.shape;
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, 'life', { WG: ELEMENTWISE_WG }, u32s(h, w, 0, 0), [a, out],
    Math.ceil((h * w) / ELEMENTWISE_WG));
}

// ---- protocol-v3 ops on 32-bit words (float32 or int32): map_bits.wgsl, extremes.wgsl ----

const MAP_BITS_OP = { clamp: 2 };  // abs (0) and square (1) are map1 ops now
const EXTREMES_OP = { reduce_max: 0, reduce_min: 1, argmax: 2, argmin: 3 };
/** @param {PlanContext} ctx @param {CheckedNode} node @returns {string} */
function operandDtype(ctx, node) {
  return /** @type {any} */ (ctx.node(node.operands[0])).dtype || 'float32';
}

/** @type {Rule} */
function planMapBits(ctx, node) {
  const n = count(node.shape);
  const dtype = operandDtype(ctx, node);
  const [lo, hi] = node.op === 'clamp' ? clampWords(node.attrs, dtype) : [0, 0];
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, 'map_bits', { WG: ELEMENTWISE_WG, OP: MAP_BITS_OP[node.op] },
    u32s(n, DTYPE_CODE[dtype], lo, hi), [a, out], Math.ceil(n / ELEMENTWISE_WG));
}

/** @type {Rule} */
function planExtremes(ctx, node) {
  const { outer, size, inner } = reduceExtents(ctx.operandShape(node, 0), node.attrs.axis);
  const dtype = operandDtype(ctx, node);
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, 'extremes', { OP: EXTREMES_OP[node.op] },
    u32s(size, inner, outer * inner, DTYPE_CODE[dtype]), [a, out], outer * inner);
}

// ---- protocol-v3 select ops on 32-bit words: select.wgsl (one kernel, OP and DT) ----

const SELECT_OP = { maximum: 0, minimum: 1, eq: 2, ne: 3, lt: 4, le: 5, gt: 6, ge: 7, where: 8,
  cast: 9, hash_uniform: 10, dropout: 11 };
const SELECT_DTYPE = { float32: 0, int32: 1, uint32: 2, bool: 3 };  // the kernel's DT, p.to
const SELECT_ELEMENTWISE = new Set(['cast', 'hash_uniform', 'dropout']);  // no broadcasting

/** @type {Rule} */
function planSelect(ctx, node) {
  const n = count(node.shape);
  const rank = node.shape.length;
  const ids = node.operands.map((_, i) => ctx.operand(node, i));
  const shapes = node.operands.map((_, i) => ctx.operandShape(node, i));
  const flat = SELECT_ELEMENTWISE.has(node.op);
  const same = flat || shapes.every((s) => sameShape(s, node.shape)) ? 1 : 0;
  const strides = [0, 1, 2].map((i) => (flat || i >= shapes.length ? [0, 0, 0, 0]
    : broadcastStrides(shapes[i], rank)));
  // where compares nothing: its DT is its cond's (bool); a cast's is its source's
  const dtype = operandDtype(ctx, node);
  const { threshold, scaleBits } = node.op === 'dropout' ? dropoutWords(node.attrs.p)
    : { threshold: 0, scaleBits: 0 };
  const to = node.op === 'cast' ? SELECT_DTYPE[node.attrs.dtype] : 0;
  /** @type {Param[]} */
  const params = [
    ...u32s(n, node.attrs.seed ?? 0, threshold, scaleBits, to, same, 0, 0),
    ...u32s(...padTo4(node.shape, contiguousStrides(node.shape)).shape),
    ...u32s(...strides[0], ...strides[1], ...strides[2]),
  ];
  const out = ctx.output(node);
  ctx.dispatch(node, 'select', { WG: ELEMENTWISE_WG, OP: SELECT_OP[node.op],
    DT: SELECT_DTYPE[dtype] }, params, [ids[0], ids[1] ?? ids[0], ids[2] ?? ids[0], out],
  Math.ceil(n / ELEMENTWISE_WG));
}

// ---- block-quantized weights (q4_k / q6_k) and matmul_fixed (quant.wgsl) ----

/**
 * A q4_k / q6_k input: a buffer of its bytes packed 4 to a u32 word (the last zero-padded).
 * @param {PlanContext} ctx @param {CheckedNode} node
 */
function planBlockInput(ctx, node) {
  const bytes = storedLength(/** @type {any} */ (node).dtype, count(node.shape));
  const id = ctx.allocate(node, Math.ceil(bytes / 4), 'input');
  ctx.bind(node, id, false);
  return id;
}

/** Rows of x one matmul_q workgroup takes (quant.wgsl MB); its 8 groups of 32 lanes. */
const QUANT_MB = 8;
const QUANT_GROUPS = 8;

/**
 * quant.wgsl's SPLIT: how many groups of 32 lanes share a weight row (a k-split over its
 * blocks): 2 once a row has 2 blocks. Measured on the H200 (docs/benchmarks.md, q4_k matmul):
 * 1 and 2 tie at batch 1, 2 is best at batch 16, 4 and 8 are slower.
 * @param {number} blocks per weight row
 */
export function quantSplit(blocks) {
  return blocks >= 2 ? 2 : 1;
}

/**
 * x of at most this many rows takes matmul_q4k_vec / matmul_q6k_vec (a GEMV); measured on the
 * H200 (docs/benchmarks.md): q4_k's GEMV wins to 5 rows, ties at 6, loses at 8 to the general
 * kernel; q6_k's wins to 8 (the kernel's limit) by 3-5x. Its workgroup's threads (VG).
 */
const QUANT_VEC_ROWS = { q4_k: 5, q6_k: 8 };
const QUANT_VEC_GROUP = 128;

/**
 * quant.wgsl matmul_q4k_vec's / matmul_q6k_vec's overrides for x of `rows` rows and weight
 * rows of `blocks` blocks, or null for the general kernel (twin of planner.py quant_vec). QL
 * lanes per weight row (8 for a one-block row), UNROLL blocks per lane per loop turn (q4_k;
 * q6_k reads one).
 * @param {number} rows @param {number} blocks @param {'q4_k' | 'q6_k'} kind
 * @returns {Record<string, number> | null}
 */
export function quantVec(rows, blocks, kind) {
  if (rows > QUANT_VEC_ROWS[kind]) return null;
  const ql = blocks >= 2 ? 16 : 8;
  return kind === 'q4_k' ? { QL: ql, MR: rows, UNROLL: 2 } : { QL: ql, MR: rows };
}

/** quant.wgsl's kind codes (dequantize's p.n). */
const QUANT_KIND = { q4_k: 0, q6_k: 1, q8_0: 2, q4_0: 3 };
/** quant.wgsl matmul_q32's KIND32 for the 32-value block kinds. */
const KIND32 = { q8_0: 0, q4_0: 1 };
const QUANT32_ROWS = 8; // rows of x one matmul_q32 workgroup takes (its Rows8)

/**
 * quant.wgsl matmul_q32's overrides for x of `rows` rows and weight rows of `blocks` 32-value
 * blocks (twin of planner.py quant32): QL lanes per weight row so that each walks about 4 to 8
 * quarter blocks, MR rows of x per workgroup.
 * @param {number} rows @param {number} blocks @param {'q8_0' | 'q4_0'} kind
 */
export function quant32(rows, blocks, kind) {
  const quarters = blocks * 4;
  const ql = quarters <= 32 ? 8 : quarters <= 128 ? 16 : 32;
  return { QL: ql, MR: Math.min(rows, QUANT32_ROWS), KIND32: KIND32[kind] };
}

/**
 * matmul_q of a q8_0 / q4_0 weight: matmul_q32.
 * @param {PlanContext} ctx @param {CheckedNode} node @param {'q8_0' | 'q4_0'} kind
 */
function planMatmulQ32(ctx, node, kind) {
  const [n, k] = ctx.operandShape(node, 1);
  const rows = count(node.shape) / n;
  const o = quant32(rows, k / 32, kind);
  const groups = Math.ceil(n / (QUANT_VEC_GROUP / o.QL));
  ctx.dispatch(node, 'quant:matmul_q32', o,
    u32s(rows, n, k, k / 32, groups, 0, 0, 0, 0, 0, 0, 0),
    [ctx.operand(node, 0), ctx.operand(node, 1), ctx.output(node)],
    groups * Math.ceil(rows / QUANT32_ROWS));
}

/** @type {Rule} */
function planMatmulQ(ctx, node) {
  const kind = operandDtypeAt(ctx, node, 1);
  if (kind === 'q8_0' || kind === 'q4_0') {
    planMatmulQ32(ctx, node, kind);
    return;
  }
  const [n, k] = ctx.operandShape(node, 1);
  const rows = count(node.shape) / n;
  const q6 = kind === 'q6_k';
  const a = ctx.operand(node, 0);
  const b = ctx.operand(node, 1);
  const out = ctx.output(node);
  const vec = quantVec(rows, k / 256, q6 ? 'q6_k' : 'q4_k');
  if (vec) {
    const groups = Math.ceil(n / (QUANT_VEC_GROUP / vec.QL));
    ctx.dispatch(node, `quant:${q6 ? 'matmul_q6k_vec' : 'matmul_q4k_vec'}`, vec,
      u32s(rows, n, k, k / 256, groups, 0, 0, 0, 0, 0, 0, 0), [a, b, out], groups);
    return;
  }
  const split = quantSplit(k / 256);
  const groupsN = Math.ceil(n / (QUANT_GROUPS / split));
  const entry = q6 ? 'matmul_q6k' : 'matmul_q4k';
  ctx.dispatch(node, `quant:${entry}`, { SPLIT: split },
    u32s(rows, n, k, k / 256, groupsN, 0, 0, 0, 0, 0, 0, 0), [a, b, out],
    groupsN * Math.ceil(rows / QUANT_MB));
}

/** @type {Rule} */
function planDequantize(ctx, node) {
  const n = count(node.shape);
  const kind = QUANT_KIND[operandDtypeAt(ctx, node, 0)];
  const a = ctx.operand(node, 0);
  const out = ctx.output(node);
  ctx.dispatch(node, 'quant:dequantize', {}, u32s(n, kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), [a, out],
    Math.ceil(n / ELEMENTWISE_WG));
}

/**
 * Rows idx of a quantized [N, K]; an index out of range records its position in the node's
 * check word (planner-index.mjs checkBuffer).
 * @type {Rule}
 */
function planDequantizeRows(ctx, node) {
  const total = count(node.shape);
  const [n, k] = ctx.operandShape(node, 0);
  const kind = QUANT_KIND[operandDtypeAt(ctx, node, 0)];
  const { buffer, slot } = checkBuffer(ctx, node);
  ctx.dispatch(node, 'quant:dequantize_rows', {},
    u32s(total, kind, k, n, slot, 0, 0, 0, 0, 0, 0, 0),
    [ctx.operand(node, 0), ctx.operand(node, 1), ctx.output(node), buffer],
    Math.ceil(total / ELEMENTWISE_WG), 2);
}

/** matmul_fixed: matmul's batch params, frac_bits last; one output per thread. @type {Rule} */
function planMatmulFixed(ctx, node) {
  const sa = ctx.operandShape(node, 0);
  const sb = ctx.operandShape(node, 1);
  const m = sa[sa.length - 2];
  const k = sa[sa.length - 1];
  const n = sb[sb.length - 1];
  const batchShape = node.shape.slice(0, -2);
  const batch4 = padTo4([...batchShape, 1, 1], []).shape;
  const aStrides = matrixBatchStrides(sa, batchShape.length, m * k);
  const bStrides = matrixBatchStrides(sb, batchShape.length, k * n);
  const batch = batch4[0] * batch4[1];
  const params = u32s(m, n, k, 0, 0, batch, batch4[1], aStrides[0], aStrides[1], bStrides[0],
    bStrides[1], node.attrs.frac_bits);
  const a = ctx.operand(node, 0);
  const b = ctx.operand(node, 1);
  const out = ctx.output(node);
  ctx.dispatch(node, 'quant:matmul_fixed', {}, params, [a, b, out],
    Math.ceil((batch * m * n) / ELEMENTWISE_WG));
}

/** @param {PlanContext} ctx @param {CheckedNode} node @param {number} i @returns {string} */
function operandDtypeAt(ctx, node, i) {
  return /** @type {any} */ (ctx.node(node.operands[i])).dtype;
}

/** The kernel registry: op name -> planning rule. @type {Record<string, Rule>} */
export const RULES = {
  input: planInput,
  full: planFull,
  ...Object.fromEntries(Object.keys(UNARY_OP).map((op) => [op, planUnary])),
  ...Object.fromEntries(Object.keys(BINARY_OP).map((op) => [op, planBinary])),
  transpose: planTranspose,
  permute: planPermute,
  reshape: planReshape,
  matmul: planMatmul,
  ...Object.fromEntries(Object.keys(REDUCE_OP).map((op) => [op, planReduce])),
  softmax: planSoftmax,
  log_softmax: planSoftmax,
  cross_entropy: planCrossEntropy,
  cross_entropy_grad: planCrossEntropyGrad,
  adam_update: planAdamUpdate,
  life: planLife,
  ...Object.fromEntries(Object.keys(MAP_BITS_OP).map((op) => [op, planMapBits])),
  ...Object.fromEntries(Object.keys(EXTREMES_OP).map((op) => [op, planExtremes])),
  ...Object.fromEntries(Object.keys(SELECT_OP).map((op) => [op, planSelect])),
  ...STUDENT_RULES,  // wgsl, wgsl_output (planner-student.mjs)
  matmul_q: planMatmulQ,
  dequantize: planDequantize,
  dequantize_rows: planDequantizeRows,
  matmul_fixed: planMatmulFixed,
  ...INDEX_RULES,  // the v4 selection ops (planner-index.mjs)
  ...WINDOW_RULES,  // the v6 window ops (planner-window.mjs)
  conv2d: planConv2d,  // direct, or im2col + the tiled matmul
};

/**
 * The dtypes a rule plans where it handles more than float32 (the kernel registry's default):
 * op -> dtypes. The WebGPU backend's supports() reads it with RULES, before planning anything.
 * @type {Record<string, string[]>}
 */
export const RULE_DTYPES = {
  // an input is a buffer of 32-bit words (bool as u32 0/1) written by the program: any dtype
  input: DTYPE_NAMES,
  // a map or reduce op runs at every dtype its family has a generated WGSL kernel for
  // (unary_i32.wgsl, ...: make gen writes one where the op table allows the dtype)
  ...Object.fromEntries(['map1', 'map2', 'reduce'].flatMap((f) => familyOps(f))
    .map((op) => [op, langDtypes(op, 'wgsl')])),
  // the select ops work on 32-bit words of every dtype the validator lets them take
  ...Object.fromEntries(Object.keys(SELECT_OP).map((op) => [op, DTYPE_NAMES])),
  // the v3 ops work on 32-bit words (map_bits.wgsl, extremes.wgsl)
  ...Object.fromEntries([...Object.keys(MAP_BITS_OP), ...Object.keys(EXTREMES_OP)]
    .map((op) => [op, ['float32', 'int32']])),
  ...STUDENT_DTYPES,
  // dequantize(_rows) is judged by its operand's dtype (matmul_q by its float32 result)
  dequantize: BLOCK_DTYPES,
  dequantize_rows: BLOCK_DTYPES,
  ...INDEX_DTYPES,
};

/**
 * The bytes of a step's uniform: params packed as 4-byte little-endian words, padded to 16.
 * @param {Param[]} params
 */
export function packParams(params) {
  const words = Math.max(4, Math.ceil(params.length / 4) * 4);
  const buf = new ArrayBuffer(words * 4);
  const view = new DataView(buf);
  params.forEach(([type, v], i) => {
    if (type === 'u32') view.setUint32(i * 4, v, true);
    else view.setFloat32(i * 4, v, true);
  });
  return new Uint8Array(buf);
}
