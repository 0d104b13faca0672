// The kernel registry of every JS backend (one shape, as TensorFlow.js's kernel_registry):
// a kernel module registers {op, backend, dtypes?, ...impl}; a backend's program looks its
// kernels up by (op, backend), and its supports(checked) asks supportsGraph which nodes of a
// graph it has no kernel for, so the runtime can refuse the graph with UNSUPPORTED before any
// device work. A missing kernel is a fact the registry reports, never a load failure.
import { GpuLabError } from './errors.mjs';
import { opSpec } from './optable.mjs';
import { loweredChecked } from './lowering.mjs';

/**
 * A registered kernel: its op, its backend, the dtypes it handles, and whatever the backend's
 * program needs to run it (cpu: `run`, wasm: `plan`, webgl2: `build` + fusion flags, webgpu:
 * `plan`, the planner's rule).
 * @typedef {{op: string, backend: string, dtypes: readonly string[], [impl: string]: any}} KernelConfig
 * @typedef {{id: number, op: string, dtype: string, reason: string, at?: string}} Missing
 *   at: what a kernel that exists lacks beyond dtypes ("rank 5"), for the message
 * @typedef {{ok: boolean, missing: Missing[]}} Support
 */

/** Every kernel has handled float32 only until it says otherwise. */
export const DEFAULT_DTYPES = Object.freeze(['float32']);

/**
 * Every kernel handles tensors of rank <= 4 (the rank of protocol versions 1 to 7) until it says
 * otherwise (`maxRank`); a node with a tensor of a higher rank is UNSUPPORTED on a backend whose
 * kernel for its op does not say so ("webgl2 has no kernel for permute at rank 5").
 */
export const DEFAULT_MAX_RANK = 4;

/** @type {Map<string, KernelConfig>} keyed `${backend}/${op}` */
const KERNELS = new Map();

const keyOf = (/** @type {string} */ op, /** @type {string} */ backend) => `${backend}/${op}`;

/**
 * Register one kernel. A second registration of the same (op, backend) throws: two kernel
 * modules claiming one op is a bug that would otherwise depend on import order.
 * @param {{op: string, backend: string, dtypes?: readonly string[], [impl: string]: any}} config
 * @returns {KernelConfig}
 */
export function registerKernel(config) {
  const { op, backend } = config ?? {};
  if (typeof op !== 'string' || !op || typeof backend !== 'string' || !backend) {
    throw new TypeError('registerKernel needs {op, backend} strings');
  }
  const key = keyOf(op, backend);
  if (KERNELS.has(key)) throw new Error(`the kernel for ${op} on ${backend} is already registered`);
  const dtypes = Object.freeze([...(config.dtypes ?? DEFAULT_DTYPES)]);
  const entry = Object.freeze({ ...config, dtypes, maxRank: config.maxRank ?? DEFAULT_MAX_RANK });
  KERNELS.set(key, entry);
  return entry;
}

/**
 * A backend's registration function in its old short form, `(op, impl, opts)`: the impl goes
 * under `implKey`, opts (dtypes, fusion flags, maxRank) beside it, over the backend's
 * `defaults`. The kernel modules keep one line each.
 * @param {string} backend @param {string} implKey @param {Record<string, any>} [defaults]
 * @returns {(op: string, impl: any, opts?: Record<string, any>) => KernelConfig}
 */
export function registrarFor(backend, implKey, defaults = {}) {
  return (op, impl, opts = {}) => registerKernel({ ...defaults, ...opts, op, backend,
    [implKey]: impl });
}

/**
 * The highest rank among a node's result and operands.
 * @param {{shape?: number[], operands?: number[]}} node @param {{byId: Map<number, any>}} checked
 */
export function nodeRank(node, checked) {
  const ranks = (node.operands ?? []).map((ref) => checked.byId.get(ref)?.shape?.length ?? 0);
  return Math.max(node.shape?.length ?? 0, ...ranks);
}

/** @param {string} op @param {string} backend @returns {KernelConfig|undefined} */
export function getKernel(op, backend) {
  return KERNELS.get(keyOf(op, backend));
}

/** @param {string} backend @returns {string[]} the ops registered on one backend */
export function registeredOps(backend) {
  return [...KERNELS.values()].filter((k) => k.backend === backend).map((k) => k.op);
}

/** @returns {string[]} every backend with at least one kernel */
export function registeredBackends() {
  return [...new Set([...KERNELS.values()].map((k) => k.backend))];
}

/** A checked node's dtype (the validator's; float32 for a hand-built node without one). */
const dtypeOf = (/** @type {{dtype?: string}|undefined} */ node) => node?.dtype ?? 'float32';

/**
 * The dtype a kernel is chosen by: the result's where the result has the op's type variable
 * (add on int32 is an int32 kernel) or there is no operand (input, full), else the first
 * operand's (argmax of float32 is a float32 kernel with an int32 result). Its twin is
 * pylib/gpulab/conformance/lanes.py kernel_dtype (lanes.json's "op:dtype"); a test compares them.
 * @param {{op: string, operands: number[], dtype?: string}} node
 * @param {{byId: Map<number, {dtype?: string}>}} checked
 */
export function kernelDtype(node, checked) {
  const spec = opSpec(node.op);
  const resultIsVariable = spec && Object.hasOwn(spec.types ?? {}, spec.result_type);
  if (!resultIsVariable && node.operands?.length) return dtypeOf(checked.byId.get(node.operands[0]));
  return dtypeOf(node);
}

/**
 * The dtypes a complete kernel for `op` handles, by the op table: those of the type variable
 * the kernel is chosen by (kernelDtype's rule), every dtype of the table for an `attr:dtype`
 * source (input), the literal for a literal source (full).
 * @param {string} op @returns {string[]}
 */
export function opKernelDtypes(op) {
  const spec = opSpec(op);
  if (!spec) return [];
  const types = spec.types ?? {};
  const rule = spec.result_type;
  const ofVariable = (/** @type {string} */ v) => (Object.hasOwn(types, v) ? [...types[v]] : [v]);
  if (Object.hasOwn(types, rule)) return ofVariable(rule);
  if (spec.operands.length) return ofVariable(spec.operand_types[spec.operands[0]]);
  if (rule.startsWith('attr:')) return [...new Set(Object.values(types).flat())];
  return [rule];
}

/**
 * Which nodes of a checked graph `backend` has no kernel for.
 * @param {string} backend
 * @param {{nodes: {id: number, op: string, operands: number[], dtype?: string}[],
 *   order: number[], byId: Map<number, any>}} given
 * @param {{without?: Iterable<string>}} [options] without: `op` or `op:dtype` entries to treat
 *   as having no kernel (a test hook: the runtime's hooks.withoutKernels)
 * @returns {Support}
 */
export function supportsGraph(backend, given, { without = [] } = {}) {
  const hidden = new Set(without);
  // judged on what the kernels will see: zero-size tensors gone, ranks past 4 coalesced
  const checked = /** @type {any} */ (loweredChecked(/** @type {any} */ (given)));
  /** @type {Missing[]} */
  const missing = [];
  for (const id of checked.order) {
    const node = checked.byId.get(id);
    const dtype = kernelDtype(node, checked);
    const kernel = hidden.has(node.op) ? undefined : getKernel(node.op, backend);
    if (!kernel) {
      missing.push({ id, op: node.op, dtype, reason: `no ${node.op} kernel` });
    } else if (!kernel.dtypes.includes(dtype) || hidden.has(`${node.op}:${dtype}`)) {
      missing.push({ id, op: node.op, dtype, reason: `no ${node.op} kernel at ${dtype}` });
    } else if (nodeRank(node, checked) > kernel.maxRank) {
      const at = `rank ${nodeRank(node, checked)}`;
      missing.push({ id, op: node.op, dtype, reason: `no ${node.op} kernel at ${at}`, at });
    }
  }
  // a reshape the lowering made is named by the graph's node that reads it
  const own = missing.filter((m) => given.byId.has(m.id));
  const named = own.length > 0 ? own : missing;
  return { ok: named.length === 0, missing: named };
}

/**
 * The refusal for a graph a backend does not support, naming its first missing node:
 * "webgl2 has no kernel for abs at int32 (node 3)".
 * @param {string} backend @param {Missing[]} missing
 */
export function unsupportedError(backend, missing) {
  const first = missing[0];
  const atDtype = first.at ? ` at ${first.at}` : /kernel at /.test(first.reason) ? ` at ${first.dtype}` : '';
  const more = missing.length > 1 ? `; ${missing.length - 1} more node(s) unsupported ` +
    `(${[...new Set(missing.slice(1).map((m) => m.op))].join(', ')})` : '';
  return new GpuLabError('UNSUPPORTED',
    `${backend} has no kernel for ${first.op}${atDtype} (node ${first.id})${more}`, first.id);
}
