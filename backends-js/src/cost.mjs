// The cost model (docs/protocol.md "Cost model"): a graph's estimated time on a CPU backend, from
// the op table's cost_model (ns per result element of each op, matmul-like ops per flop), known
// from the checked graph before any work, so a graph that would hold the backend for minutes (an
// 8192^3 matmul on cpu: ~25 min) is refused with LIMIT instead. Python twin: pylib/gpulab/quotas.py
// graph_cost_s (compared on the corpus by pylib/tests/test_hostile.py).
import { GpuLabError } from './errors.mjs';
import { table } from './optable.mjs';
import { numel } from './shapes.mjs';
import { windowTaps } from './shapes-conv.mjs';

const MODEL = table.cost_model;
const FLOP_OPS = new Set(MODEL.flop_ops);
const WINDOW_OPS = new Set(MODEL.window_ops);
const SOURCES = new Set(['input', 'full']);

/**
 * @typedef {{limit_s: number, ns_per_flop: number, ns_per_element: Record<string, number>}} BackendModel
 */

/** A backend's cost model, or null where it has none (GPU backends). @param {string} backend */
export function backendModel(backend) {
  return /** @type {BackendModel|null} */ (Object.hasOwn(MODEL.backends, backend)
    ? MODEL.backends[backend] : null);
}

/**
 * Estimated seconds of one evaluation of a checked graph on a backend (null: no model).
 * @param {import('./validate.mjs').CheckedGraph} checked @param {string} backend
 */
export function graphCostS(checked, backend) {
  const model = backendModel(backend);
  if (!model) return null;
  let ns = 0;
  for (const id of checked.order) {
    const node = checked.byId.get(id);
    if (SOURCES.has(node.op)) continue;
    const count = numel(node.shape);
    if (FLOP_OPS.has(node.op)) {
      const a = checked.byId.get(node.operands[0]).shape;
      ns += 2 * count * a[a.length - 1] * model.ns_per_flop;
    } else if (WINDOW_OPS.has(node.op)) { // conv2d, the pools, resize: K = the taps per result
      const shapes = node.operands.map((ref) => checked.byId.get(ref).shape);
      ns += 2 * count * windowTaps(node.op, shapes, node.attrs) * model.ns_per_flop;
    } else {
      ns += count * (model.ns_per_element[node.op] ?? model.ns_per_element.default);
    }
  }
  return ns * 1e-9;
}

/** Seconds as a short number: 0.02, 3.5, 1651. @param {number} s */
function seconds(s) {
  return s >= 10 ? s.toFixed(0) : s.toPrecision(2);
}

/**
 * LIMIT, before any work, when one evaluation of the graph is estimated past the limit: the
 * runtime's quotas.maxCostS, else the backend's limit_s. Nothing for backends without a model.
 * @param {import('./validate.mjs').CheckedGraph} checked @param {string} backend
 * @param {string} what @param {number|null} [override]
 */
export function checkCost(checked, backend, what, override = null) {
  const model = backendModel(backend);
  if (!model) return;
  const limit = override ?? model.limit_s;
  const estimate = /** @type {number} */ (graphCostS(checked, backend));
  if (estimate > limit) {
    throw new GpuLabError('LIMIT', `${what}: the graph would take about ${seconds(estimate)} s ` +
      `on the ${backend} backend, past its limit of ${limit} s per evaluation (quotas.maxCostS; ` +
      'cost model: the op table\'s cost_model)');
  }
}
