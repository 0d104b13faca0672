// The benchmark model as one protocol graph, built by hand in JS: a 784-256-10 MLP training step
// with Adam at batch 64 (forward, cross-entropy on one-hot targets, backward with protocol ops,
// Adam updates of all four parameters), plus deterministic data so every backend and
// TensorFlow.js start from the same weights. The wasm benchmark page (bench/wasm/) and the wasm
// backend's tests (backends-js/test/, e2e/test_wasm_browser.py) build the same step from here;
// it lives in the package so neither depends on the other. gpulab.models.mlp builds the same
// step in Python (the browser benchmark's fixture), from its own data.

export const SIZES = Object.freeze({ batch: 64, input: 784, hidden: 256, classes: 10 });
export const ADAM = Object.freeze({ lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8 });

/** A small deterministic generator (mulberry32), so runs and pages agree on the data. */
export function random(seed = 1) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Initial weights (uniform Glorot), zero biases, and `batches` input batches with one-hot labels.
 * @param {{seed?: number, batches?: number}} [opts]
 */
export function mlpData({ seed = 1, batches = 1 } = {}) {
  const { batch, input, hidden, classes } = SIZES;
  const rnd = random(seed);
  const uniform = (n, limit) => Float32Array.from({ length: n }, () => (rnd() * 2 - 1) * limit);
  const w1 = uniform(input * hidden, Math.sqrt(6 / (input + hidden)));
  const w2 = uniform(hidden * classes, Math.sqrt(6 / (hidden + classes)));
  const xs = [];
  const ys = [];
  for (let b = 0; b < batches; b++) {
    xs.push(Float32Array.from({ length: batch * input }, () => rnd()));
    const y = new Float32Array(batch * classes);
    for (let r = 0; r < batch; r++) y[r * classes + Math.floor(rnd() * classes)] = 1;
    ys.push(y);
  }
  return { w1, b1: new Float32Array(hidden), w2, b2: new Float32Array(classes), xs, ys };
}

/**
 * The training step graph. Parameters, Adam moments and the step counter are inputs with data
 * (so a session can carry them); x and y are inputs with data too unless `feedXY` (then fed).
 * Outputs: loss, and the new value of every carried input (named after it with a trailing _).
 * @param {ReturnType<typeof mlpData>} data
 * @param {{feedXY?: boolean, step?: number, batch?: number,
 *   moments?: Record<string, {m: Float32Array, v: Float32Array}>}} [opts] `batch` picks the
 *   data batch, `moments` the initial Adam moments (zeros when absent)
 */
export function mlpStepGraph(data, { feedXY = false, step = 1, batch: which = 0, moments: m0 } = {}) {
  const { batch, input, hidden, classes } = SIZES;
  /** @type {any[]} */
  const nodes = [];
  const add = (node) => {
    nodes.push({ id: nodes.length, ...node });
    return nodes.length - 1;
  };
  const inputOf = (shape, values) => add({ op: 'input', shape, ...(values ? { data: values } : {}) });
  const x = inputOf([batch, input], feedXY ? null : data.xs[which]);
  const y = inputOf([batch, classes], feedXY ? null : data.ys[which]);
  const params = {
    w1: inputOf([input, hidden], data.w1), b1: inputOf([hidden], data.b1),
    w2: inputOf([hidden, classes], data.w2), b2: inputOf([classes], data.b2),
  };
  /** @type {Record<string, {m: number, v: number}>} */
  const moments = {};
  for (const [name, id] of Object.entries(params)) {
    const zeros = new Float32Array(nodes[id].shape.reduce((p, d) => p * d, 1));
    moments[name] = { m: inputOf(nodes[id].shape, m0?.[name].m ?? zeros),
      v: inputOf(nodes[id].shape, m0?.[name].v ?? zeros) };
  }
  const t = inputOf([1], new Float32Array([step]));
  const op = (name, a, b, attrs = {}) => add({ op: name, a, ...(b === undefined ? {} : { b }), ...attrs });

  const z1 = op('add', op('matmul', x, params.w1), params.b1);
  const a1 = op('relu', z1);
  const z2 = op('add', op('matmul', a1, params.w2), params.b2);
  const loss = op('cross_entropy', z2, y);
  const dz2 = op('cross_entropy_grad', z2, y);
  const grads = {
    w2: op('matmul', op('transpose', a1), dz2),
    b2: op('sum', dz2, undefined, { axis: 0 }),
  };
  const dz1 = op('mul', op('matmul', dz2, op('transpose', params.w2)), op('positive', z1));
  grads.w1 = op('matmul', op('transpose', x), dz1);
  grads.b1 = op('sum', dz1, undefined, { axis: 0 });

  const outputs = [{ name: 'loss', id: loss }];
  /** @type {Record<number, string>} carry: input id -> output name */
  const carry = {};
  for (const name of ['w1', 'b1', 'w2', 'b2']) {
    const m = op('adam_m', moments[name].m, grads[name], { beta1: ADAM.beta1 });
    const v = op('adam_v', moments[name].v, grads[name], { beta2: ADAM.beta2 });
    const p = add({ op: 'adam_update', a: params[name], b: m, c: v, t, ...ADAM });
    for (const [label, id, from] of [[name, p, params[name]], [`m_${name}`, m, moments[name].m],
      [`v_${name}`, v, moments[name].v]]) {
      outputs.push({ name: `${label}_`, id });
      carry[from] = `${label}_`;
    }
  }
  const next = op('add', t, add({ op: 'full', shape: [1], value: 1 }));
  outputs.push({ name: 't_', id: next });
  carry[t] = 't_';
  return { graph: { version: 2, nodes, outputs }, carry, feeds: feedXY ? [x, y] : [], ids: { x, y, t, ...params } };
}
