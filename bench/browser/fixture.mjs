// The benchmark fixture: the MLP Adam step graph that gpulab.models.mlp builds from init(0),
// served as JSON by gpulab.benchmarks.browser (float32 data as base64, so every lane starts
// from the exact numbers PyTorch and the native benchmark use).

/** @param {string} text base64 of little-endian float32 @returns {Float32Array} */
export function decodeF32(text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new Float32Array(bytes.buffer);
}

/**
 * @typedef {{id: number, op: string, shape?: number[], data?: Float32Array, [k: string]: unknown}} Node
 * @typedef {{version: number, nodes: Node[], outputs: {name: string, id: number}[]}} Graph
 * @typedef {{graph: Graph, feeds: {x: number, y: number}, batch: {x: Float32Array, y: Float32Array},
 *   carry: Record<string, string>, params: Record<string, number>,
 *   sizes: {batch: number, inputs: number, hidden: number, classes: number},
 *   adam: {lr: number, beta1: number, beta2: number, eps: number}, loss: string,
 *   seed: number}} Fixture
 */

/**
 * Fetch and decode the fixture; refuse a missing or malformed one with what is wrong.
 * @param {string} url @returns {Promise<Fixture>}
 */
export async function loadFixture(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`fixture ${url}: HTTP ${response.status} (serve the page with ` +
      '`gpulab bench --browser`, which builds it from gpulab.models.mlp.init)');
  }
  const raw = await response.json();
  for (const key of ['graph', 'feeds', 'batch', 'carry', 'params', 'sizes', 'adam', 'loss']) {
    if (!(key in raw)) throw new Error(`fixture ${url}: "${key}" is missing`);
  }
  for (const node of raw.graph.nodes) {
    if ('data_f32' in node) {
      node.data = decodeF32(node.data_f32);
      delete node.data_f32;
    }
  }
  raw.batch = { x: decodeF32(raw.batch.x), y: decodeF32(raw.batch.y) };
  return raw;
}

/**
 * The same graph with the batch as data instead of fed (what `execute` runs). Nodes are
 * shallow copies; the weight arrays are shared, never written.
 * @param {Fixture} fx @returns {Graph}
 */
export function graphWithBatch(fx) {
  const data = new Map([[fx.feeds.x, fx.batch.x], [fx.feeds.y, fx.batch.y]]);
  const nodes = fx.graph.nodes.map((n) => (data.has(n.id) ? { ...n, data: data.get(n.id) } : n));
  return { ...fx.graph, nodes };
}

/** Initial value of a parameter by name (w1, b1, w2, b2). @param {Fixture} fx @param {string} name */
export function paramData(fx, name) {
  const node = fx.graph.nodes.find((n) => n.id === fx.params[name]);
  if (!node?.data) throw new Error(`fixture: parameter ${name} has no data`);
  return node.data;
}
