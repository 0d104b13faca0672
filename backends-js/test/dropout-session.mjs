// The dropout session check, shared by the node test (cpu, wasm) and the page tests
// (webgpu, webgl2, e2e/test_select_sessions.py): a state carried through dropout for 5 session
// steps fed counters 0..4 against 5 chained executes (the state through the host), and the
// masks of successive steps.

const N = 4096;
const P = 0.25;
const SEED = 11;

/** One step: w' = dropout(w, counter) + 0.5 * w; node 1 is the counter (fed, uint32 []). */
function stepGraph(/** @type {Float32Array|null} */ w, /** @type {number|null} */ counter) {
  const input = { id: 0, op: 'input', shape: [N], ...(w ? { data: w } : {}) };
  const c = { id: 1, op: 'input', shape: [], dtype: 'uint32',
    ...(counter === null ? {} : { data: [counter] }) };
  return { version: 3, nodes: [input, c,
    { id: 2, op: 'dropout', a: 0, counter: 1, p: P, seed: SEED },
    { id: 3, op: 'full', shape: [], value: 0.5 },
    { id: 4, op: 'mul', a: 0, b: 3 },
    { id: 5, op: 'add', a: 2, b: 4 }],
  outputs: [{ name: 'y', id: 5 }, { name: 'kept', id: 2 }] };
}

const bits = (/** @type {Float32Array} */ a) => Array.from(new Uint32Array(a.buffer, a.byteOffset,
  a.length));

/**
 * @param {{prepare: Function, execute: Function}} rt a runtime of the backend under test
 * @returns {Promise<{backend: string, session: number[], chained: number[], changed: number[],
 *   kept: number[]}>} the final states' bits; per step pair, how many kept-masks differ
 */
export async function dropoutSessionCheck(rt) {
  const w0 = Float32Array.from({ length: N }, (_, i) => -2 + (4 * i) / N + 0.001);
  const s = await rt.prepare(stepGraph(w0, null), { feeds: [1], carry: { 0: 'y' },
    outputs: ['y'] });
  const run = await s.run([0, 1, 2, 3, 4].map((k) => ({ 1: new Uint32Array([k]) })));
  const session = bits(run.outputs.y.data);
  s.dispose();
  let state = w0;
  const masks = [];
  let backend = '';
  for (let k = 0; k < 5; k++) {
    const r = await rt.execute(stepGraph(state, k));
    backend = r.backend;
    state = r.outputs.y.data;
    masks.push(Array.from(r.outputs.kept.data, (v) => (v !== 0 ? 1 : 0)));
  }
  const changed = masks.slice(1).map((m, k) => m.filter((v, i) => v !== masks[k][i]).length);
  const kept = masks.map((m) => m.reduce((x, y) => x + y, 0));
  return { backend, session, chained: bits(state), changed, kept };
}
