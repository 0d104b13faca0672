// Quotas for untrusted notebooks: what one runtime may hold on its backend at once.
// A graph's cost is known from its checked graph before any device work (so a quota refuses
// with LIMIT before it): device memory = every live node's tensor in 32-bit words (bool is
// stored as u32 on GPUs; no buffer reuse is assumed, so it is an upper bound), one buffer or
// texture per live node, one pipeline per distinct kernel (op at dtype; sources have none).
// A session holds its cost until it is disposed; an execute holds it while it runs.
// The Python twin is pylib/gpulab/quotas.py (graph_cost); a test compares them.
import { GpuLabError } from './errors.mjs';
import { numel } from './shapes.mjs';

const MiB = 1024 * 1024;
/** Defaults, and the most an option may ask for (docs/protocol.md "Limits"). */
export const QUOTAS = Object.freeze({
  memoryBytes: { default: 256 * MiB, max: 1536 * MiB },
  buffers: { default: 4096, max: 4096 },
  pipelines: { default: 256, max: 256 },
});
const SOURCES = new Set(['input', 'full']);
const WHAT = { memoryBytes: 'bytes of device memory', buffers: 'buffers/textures',
  pipelines: 'pipelines' };

/**
 * A node's device memory: its tensor in 32-bit words; a student's wgsl node holds every result
 * it declares, and wgsl_output is a view of one of them.
 * @param {{op: string, shape: number[], attrs: Record<string, any>}} node
 */
function nodeBytes(node) {
  if (node.op === 'wgsl') return node.attrs.results.reduce((s, r) => s + numel(r.shape) * 4, 0);
  return node.op === 'wgsl_output' ? 0 : numel(node.shape) * 4;
}

/**
 * The device cost of a checked graph.
 * @param {import('./validate.mjs').CheckedGraph} checked
 * @returns {{memoryBytes: number, buffers: number, pipelines: number}}
 */
export function graphCost(checked) {
  let memoryBytes = 0;
  const kernels = new Set();
  for (const id of checked.order) {
    const node = checked.byId.get(id);
    memoryBytes += nodeBytes(node);
    if (node.op === 'wgsl') kernels.add(`wgsl:${node.attrs.source}`); // one per student source
    else if (!SOURCES.has(node.op) && node.op !== 'wgsl_output') kernels.add(`${node.op}:${node.dtype}`);
  }
  return { memoryBytes, buffers: checked.order.length, pipelines: kernels.size };
}

/**
 * The quotas of one runtime from its `quotas` option ({memoryBytes, buffers, pipelines}: each
 * an integer from 1 to its max; absent = the default). VALIDATION for anything else.
 * @param {Record<string, unknown>|undefined} options
 */
export function createQuotas(options) {
  const given = options ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) {
    throw new GpuLabError('VALIDATION', 'quotas must be an object {memoryBytes, buffers, pipelines}');
  }
  /** @type {Record<string, number>} */
  const limit = {};
  for (const [name, { default: fallback, max }] of Object.entries(QUOTAS)) {
    const value = given[name] ?? fallback;
    if (!Number.isInteger(value) || value < 1 || value > max) {
      throw new GpuLabError('VALIDATION', `quotas.${name} must be an integer from 1 to ${max}, ` +
        `got ${String(value)}`);
    }
    limit[name] = value;
  }
  // maxCostS: the cost model's limit per evaluation (cost.mjs), else each backend's limit_s
  const maxCostS = given.maxCostS ?? null;
  if (maxCostS !== null && !(typeof maxCostS === 'number' && maxCostS > 0 && maxCostS <= 86400)) {
    throw new GpuLabError('VALIDATION', `quotas.maxCostS must be a number of seconds in (0, ` +
      `86400], got ${String(maxCostS)}`);
  }
  const unknown = Object.keys(given).find((k) => !Object.hasOwn(QUOTAS, k) && k !== 'maxCostS');
  if (unknown !== undefined) throw new GpuLabError('VALIDATION', `unknown quota "${unknown}"`);
  const used = { memoryBytes: 0, buffers: 0, pipelines: 0 };
  return {
    limit: Object.freeze({ ...limit }),
    maxCostS,
    get used() { return { ...used }; },
    /**
     * Hold a graph's cost, or refuse it with LIMIT naming the quota; returns the release.
     * @param {import('./validate.mjs').CheckedGraph} checked @param {string} what
     */
    reserve(checked, what) {
      const cost = graphCost(checked);
      for (const name of Object.keys(QUOTAS)) {
        if (used[name] + cost[name] > limit[name]) {
          const held = used[name] ? ` (${used[name]} held by open sessions)` : '';
          throw new GpuLabError('LIMIT', `${what}: the graph needs ${cost[name]} ` +
            `${WHAT[name]}${held}, past the runtime's quota of ${limit[name]} (quotas.${name})`);
        }
      }
      for (const name of Object.keys(QUOTAS)) used[name] += cost[name];
      let released = false;
      return () => {
        if (released) return;
        released = true;
        for (const name of Object.keys(QUOTAS)) used[name] -= cost[name];
      };
    },
  };
}
