// Test scenarios of the WebGL2 backend, run by e2e/test_webgl2.py on the main thread
// (webgl2_test.html) and in a module Web Worker (webgl2_worker.mjs): the same code both ways.
// Each scenario returns plain data (float32 bits as base64) and the Python test judges it, so
// nothing here decides pass or fail.
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { runCases, toBase64 } from '/pylib/gpulab/conformance/run_cases.mjs';

const SOFT = { backend: 'webgl2', allowSoftware: true };

/** @param {unknown} err */
function errorOf(err) {
  const e = /** @type {any} */ (err);
  return { code: e?.code ?? `CRASH (${e?.name})`, message: String(e?.message ?? err), node: e?.node ?? null };
}

/** Resolve to {value} or {error}, failing with TIMEOUT instead of hanging. @param {Promise<any>} p */
async function settle(p, ms = 30000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    const late = () => reject(Object.assign(new Error(`no answer after ${ms} ms`), { code: 'TIMEOUT' }));
    timer = setTimeout(late, ms);
  });
  try {
    return { value: await Promise.race([p, timeout]) };
  } catch (err) {
    return { error: errorOf(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Deterministic pseudo-random floats in [-scale, scale). @param {number} n @param {number} seed */
function noise(n, seed, scale = 1) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

// ---- the conformance corpus ----------------------------------------------------------------

/**
 * The corpus on WebGL2 (software allowed), answered like the conformance runner's lanes.
 * maxTextureSize (optional) shrinks the texture limit so every tensor wraps across rows;
 * flatMatmul sends every matmul down the general (flat packed) path instead of blocks;
 * blockRows 4 makes the blocks 4 rows high (as with fewer than 8 draw buffers);
 * with profile, the answer also lists the shader of every pass run (webgl2Profile).
 */
export async function conformance({ cases, maxTextureSize = null, flatMatmul = false,
  blockRows = null, profile = false }) {
  const log = [];
  const hooks = { webgl2FlatMatmul: flatMatmul, webgl2BlockRows: blockRows };
  if (maxTextureSize) hooks.webgl2MaxTextureSize = maxTextureSize;
  if (profile) hooks.webgl2Profile = log;
  const payload = await runCases((opts) => createRuntime({ ...opts, hooks }), SOFT, cases);
  return { ...payload, passes: log.map((p) => p.key) };
}

// ---- tensors larger than one texture row -------------------------------------------------

/** A graph over tensors of more than MAX_TEXTURE_SIZE (8192 here) elements. */
function largeGraph() {
  const x = noise(3 * 8200, 7, 4);
  const w = noise(8200 * 5, 8, 1);
  const cells = noise(150 * 200, 9, 1).map((v) => (v > 0.3 ? 1 : 0));
  const nodes = [
    { id: 0, op: 'input', shape: [3, 8200], data: [...x] },
    { id: 1, op: 'input', shape: [8200, 5], data: [...w] },
    { id: 2, op: 'input', shape: [150, 200], data: [...cells] },
    { id: 10, op: 'sum', a: 0 }, { id: 11, op: 'sum', a: 0, axis: 1 },
    { id: 12, op: 'sum', a: 0, axis: 0, keepdim: true }, { id: 13, op: 'mean', a: 0, axis: -1 },
    { id: 14, op: 'transpose', a: 0 }, { id: 15, op: 'permute', a: 1, dims: [1, 0] },
    { id: 16, op: 'reshape', a: 0, shape: [-1] }, { id: 17, op: 'neg', a: 16 },
    { id: 18, op: 'life', a: 2 }, { id: 19, op: 'relu', a: 14 },
    { id: 20, op: 'matmul', a: 0, b: 1 }, { id: 21, op: 'softmax', a: 0, axis: 1 },
    { id: 22, op: 'log_softmax', a: 0, axis: 0 }, { id: 23, op: 'sum', a: 14, axis: 0 },
  ];
  const names = { sum_all: 10, sum_axis1: 11, sum_axis0: 12, mean_axis1: 13, transpose: 14,
    permute: 15, reshape: 16, neg: 17, life: 18, relu: 19, matmul: 20, softmax: 21,
    log_softmax: 22, sum_strided: 23 };
  return { version: 2, nodes, outputs: Object.entries(names).map(([name, id]) => ({ name, id })) };
}

/** largeGraph on webgl2 and on the JS CPU reference, every output as float32 bits. */
export async function largeLayout() {
  const graph = largeGraph();
  const out = { inputs: Object.fromEntries(graph.nodes.slice(0, 3)
    .map((n) => [n.id, toBase64(Float32Array.from(n.data))])) };
  for (const backend of ['webgl2', 'cpu']) {
    const rt = await createRuntime({ backend, allowSoftware: true });
    const r = await rt.execute(graph);
    out[backend] = Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, toBase64(v.data)]));
    rt.dispose();
  }
  return out;
}

/**
 * Reductions over rows of at most 64 elements on webgl2 (reduce.glsl SHORT_LEN), on webgl2
 * by the general loop (hook webgl2NoShortRows) and on the JS CPU reference, every output as
 * float32 bits: sums, means, softmax, log_softmax,
 * cross_entropy (and its gradient) for row lengths 1 to 64, along the last axis and along the
 * first, with -0, infinities and NaN in some rows.
 */
export async function shortRows() {
  const nodes = [];
  const outputs = [];
  let id = 0;
  for (const len of [1, 3, 10, 33, 64]) {
    const rows = 6;
    const data = noise(rows * len, 40 + len, 3);
    data[0] = -0;  // row 0 starts with -0 (a lone -0 sums to +0)
    if (len > 2) { data[len] = Infinity; data[2 * len + 1] = -Infinity; data[3 * len + 2] = NaN; }
    const onehot = new Float32Array(rows * len);
    for (let r = 0; r < rows; r++) onehot[r * len + ((r * 5) % len)] = 1;
    const a = id++;
    const b = id++;
    nodes.push({ id: a, op: 'input', shape: [rows, len], data: [...data] },
      { id: b, op: 'input', shape: [rows, len], data: [...onehot] });
    const add = (op, attrs, operands = { a }) => {
      const n = { id: id++, op, ...operands, ...attrs };
      nodes.push(n);
      outputs.push({ name: `${op}_${JSON.stringify(attrs)}_${len}`, id: n.id });
    };
    add('sum', { axis: 1 });
    add('sum', { axis: 0 });
    add('mean', { axis: 1 });
    add('softmax', { axis: 1 });
    add('log_softmax', { axis: 1 });
    add('softmax', { axis: 0 });
    add('cross_entropy', {}, { a, b });
    add('cross_entropy_grad', {}, { a, b });
  }
  const graph = { version: 2, nodes, outputs };
  const out = {};
  const lanes = [['webgl2', 'webgl2', {}], ['loop', 'webgl2', { webgl2NoShortRows: true }],
    ['cpu', 'cpu', {}]];
  for (const [lane, backend, hooks] of lanes) {
    const log = [];
    const rt = await createRuntime({ backend, allowSoftware: true,
      hooks: backend === 'webgl2' ? { ...hooks, webgl2Profile: log } : {} });
    const r = await rt.execute(graph);
    out[lane] = Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, toBase64(v.data)]));
    out[`${lane}Passes`] = log.map((p) => p.key);
    rt.dispose();
  }
  return out;
}

/**
 * The matmul epilogue (elementwise.mjs): add, sub and mul reading a matmul product nothing
 * else reads, with the product on either side, a broadcast bias or a same-shape operand,
 * K % 4 != 0 and N % 4 != 0, batched; a product that is an output or read twice stays
 * unfused. webgl2 fused, unfused (hook webgl2NoEpilogue), each on the block and the flat path:
 * every output as bits, and the shaders run.
 */
export async function epilogue() {
  const input = (id, shape, seed) => ({ id, op: 'input', shape,
    data: [...noise(shape.reduce((a, b) => a * b, 1), seed, 2)] });
  const nodes = [
    input(0, [9, 13], 31), input(1, [13, 6], 32), input(2, [6], 33), input(3, [9, 6], 34),
    input(4, [2, 5, 8], 35), input(5, [2, 8, 4], 36), input(6, [4], 37),
    { id: 10, op: 'matmul', a: 0, b: 1 }, { id: 11, op: 'add', a: 10, b: 2 },      // bias
    { id: 12, op: 'matmul', a: 0, b: 1 }, { id: 13, op: 'sub', a: 3, b: 12 },      // on b's side
    { id: 14, op: 'matmul', a: 0, b: 1 }, { id: 15, op: 'mul', a: 14, b: 3 },      // same shape
    { id: 16, op: 'matmul', a: 4, b: 5 }, { id: 17, op: 'add', a: 16, b: 6 },      // batched
    { id: 18, op: 'matmul', a: 0, b: 1 }, { id: 19, op: 'add', a: 18, b: 2 },      // 18 is an output
    { id: 20, op: 'matmul', a: 0, b: 1 }, { id: 21, op: 'mul', a: 20, b: 20 },     // read twice
    { id: 22, op: 'matmul', a: 0, b: 1 }, { id: 23, op: 'add', a: 2, b: 22 },      // bias first
  ];
  const names = { add: 11, sub: 13, mul: 15, batched: 17, out18: 18, shared: 19, square: 21,
    biasFirst: 23 };
  const graph = { version: 2, nodes,
    outputs: Object.entries(names).map(([name, id]) => ({ name, id })) };
  const out = {};
  const lanes = [['fused', {}], ['plain', { webgl2NoEpilogue: true }],
    ['fusedFlat', { webgl2FlatMatmul: true }], ['plainFlat', { webgl2NoEpilogue: true, webgl2FlatMatmul: true }]];
  for (const [lane, hooks] of lanes) {
    const log = [];
    const rt = await createRuntime({ ...SOFT, hooks: { ...hooks, webgl2Profile: log } });
    const r = await rt.execute(graph);
    out[lane] = { values: Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, toBase64(v.data)])),
      passes: log.map((p) => p.key) };
    rt.dispose();
  }
  return out;
}

// ---- transposes read by matmul ---------------------------------------------------------------

/**
 * Transposes feeding matmuls (batched, broadcast, on either side, K % 4 != 0): folded into the
 * matmul's packing unless something else reads them (t1 also feeds a relu).
 */
function transposeGraph() {
  const input = (id, shape, seed) => ({ id, op: 'input', shape,
    data: [...noise(shape.reduce((a, b) => a * b, 1), seed, 2)] });
  const nodes = [
    input(0, [2, 5, 7], 21), input(1, [2, 5, 6], 22), input(2, [3, 1, 4, 5], 23),
    input(3, [2, 6, 5], 24), input(4, [9, 11], 25),
    { id: 10, op: 'transpose', a: 0 }, { id: 11, op: 'matmul', a: 10, b: 1 },   // [2, 7, 6]
    { id: 12, op: 'transpose', a: 1 }, { id: 13, op: 'matmul', a: 12, b: 0 },   // [2, 6, 7]
    { id: 14, op: 'relu', a: 12 },
    { id: 15, op: 'transpose', a: 3 }, { id: 16, op: 'matmul', a: 2, b: 15 },   // [3, 2, 4, 6]
    { id: 17, op: 'transpose', a: 4 }, { id: 18, op: 'matmul', a: 17, b: 4 },   // [11, 11], K = 9
  ];
  const names = { tA_B: 11, tB_A: 13, relu_tB: 14, E_tF: 16, tX_X: 18 };
  return { version: 2, nodes, outputs: Object.entries(names).map(([name, id]) => ({ name, id })) };
}

/** transposeGraph on webgl2 (8- and 4-row blocks, then the flat path) and the CPU reference. */
export async function transposeFolding() {
  const graph = transposeGraph();
  const out = { inputs: Object.fromEntries(graph.nodes.filter((n) => n.op === 'input')
    .map((n) => [n.id, { shape: n.shape, data: toBase64(Float32Array.from(n.data)) }])) };
  const encode = (r) => Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, toBase64(v.data)]));
  const lanes = [['blocks', {}], ['blocks4', { webgl2BlockRows: 4 }], ['flat', { webgl2FlatMatmul: true }]];
  for (const [lane, hooks] of lanes) {
    const profile = [];
    const rt = await createRuntime({ ...SOFT, hooks: { ...hooks, webgl2Profile: profile } });
    out[lane] = { values: encode(await rt.execute(graph)), passes: profile.map((p) => p.key) };
    rt.dispose();
  }
  const cpu = await createRuntime({ backend: 'cpu' });
  out.cpu = { values: encode(await cpu.execute(graph)) };
  cpu.dispose();
  return out;
}

// ---- policy --------------------------------------------------------------------------------

/** Without allowSoftware: the explicit backend refuses, auto records the refusal. */
export async function refusal() {
  const explicit = await settle(createRuntime({ backend: 'webgl2' }));
  const auto = await createRuntime({ backend: 'auto' });
  const allowed = await createRuntime(SOFT);
  const out = {
    explicit: explicit.error ?? { ok: true },
    auto: { backend: auto.backend, attempts: auto.attempts },
    allowed: { backend: allowed.backend, info: allowed.info },
  };
  auto.dispose();
  allowed.dispose();
  return out;
}

// ---- validation before GL work -------------------------------------------------------------

const BAD_GRAPHS = {
  unknown_op: { version: 2, nodes: [{ id: 0, op: 'input', shape: [2], data: [1, 2] },
    { id: 1, op: 'frobnicate', a: 0 }], outputs: [{ name: 'y', id: 1 }] },
  dangling_operand: { version: 1, nodes: [{ id: 0, op: 'input', shape: [2], data: [1, 2] },
    { id: 1, op: 'add', a: 0, b: 7 }], outputs: [{ name: 'y', id: 1 }] },
  shape_mismatch: { version: 2, nodes: [{ id: 0, op: 'input', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] },
    { id: 1, op: 'input', shape: [4, 2], data: [1, 2, 3, 4, 5, 6, 7, 8] },
    { id: 2, op: 'matmul', a: 0, b: 1 }], outputs: [{ name: 'y', id: 2 }] },
  wrong_data_length: { version: 1, nodes: [{ id: 0, op: 'input', shape: [3], data: [1, 2] },
    { id: 1, op: 'relu', a: 0 }], outputs: [{ name: 'y', id: 1 }] },
  v1_softmax: { version: 1, nodes: [{ id: 0, op: 'input', shape: [3], data: [1, 2, 3] },
    { id: 1, op: 'softmax', a: 0 }], outputs: [{ name: 'y', id: 1 }] },
  too_many_elements: { version: 1, nodes: [{ id: 0, op: 'full', shape: [65536, 65536], value: 1 }],
    outputs: [{ name: 'y', id: 0 }] },
};

const GOOD_GRAPH = { version: 1, nodes: [{ id: 0, op: 'input', shape: [3], data: [-2, 3, 4] },
  { id: 1, op: 'input', shape: [3], data: [10, 20, 30] }, { id: 2, op: 'mul', a: 0, b: 1 },
  { id: 3, op: 'relu', a: 2 }], outputs: [{ name: 'values', id: 3 }] };

/** Bad graphs refused by the validator with no texture created; then a good one creates some. */
export async function badInput() {
  const hooks = {};
  const rt = await createRuntime({ ...SOFT, hooks });
  const refused = {};
  for (const [name, graph] of Object.entries(BAD_GRAPHS)) {
    const r = await settle(rt.execute(graph));
    refused[name] = { error: r.error ?? null, created: hooks.webgl2Stats().created };
  }
  const good = await rt.execute(GOOD_GRAPH);
  const out = { refused,
    good: { values: [...good.outputs.values.data], created: hooks.webgl2Stats().created } };
  rt.dispose();
  return out;
}

// ---- shader errors -------------------------------------------------------------------------

/** A GLSL compile error (injected into unary.glsl) is BACKEND, leaks nothing, spares others. */
export async function shaderError() {
  const hooks = {
    webgl2TransformSource: (file, source) => (file === 'unary.glsl'
      ? source.replace('float op(float x) {', 'float op(float x) { this is not GLSL;') : source),
  };
  const rt = await createRuntime({ ...SOFT, hooks });
  const relu = await settle(rt.execute(GOOD_GRAPH));
  const afterError = hooks.webgl2Stats();
  const add = { version: 1, nodes: [{ id: 0, op: 'input', shape: [2], data: [1, 2] },
    { id: 1, op: 'add', a: 0, b: 0 }], outputs: [{ name: 'y', id: 1 }] };
  const other = await settle(rt.execute(add));
  rt.dispose();
  return { relu: relu.error ?? { ok: true }, afterError,
    other: other.value ? [...other.value.outputs.y.data] : other.error };
}

// ---- device limits -------------------------------------------------------------------------

/** With a 4x4 texture limit, a 17-element tensor is refused with LIMIT at prepare. */
export async function textureLimit() {
  const hooks = { webgl2MaxTextureSize: 4 };
  const rt = await createRuntime({ ...SOFT, hooks });
  const graph = (n) => ({ version: 1, nodes: [{ id: 0, op: 'full', shape: [n], value: 2 },
    { id: 1, op: 'relu', a: 0 }], outputs: [{ name: 'y', id: 1 }] });
  const fits = await settle(rt.execute(graph(16)));
  const tooBig = await settle(rt.execute(graph(17)));
  const stats = hooks.webgl2Stats();
  rt.dispose();
  return { fits: fits.value ? [...fits.value.outputs.y.data] : fits.error,
    tooBig: tooBig.error ?? { ok: true }, stats };
}

// ---- pooling -------------------------------------------------------------------------------

/** A small MLP step (see mlpGraph) executed 30 times: live textures after each, then dispose. */
export async function pooling() {
  const hooks = {};
  const rt = await createRuntime({ ...SOFT, hooks });
  const graph = mlpGraph({ fed: false });
  const live = [];
  const lossBits = new Set();
  for (let i = 0; i < 30; i++) {
    const r = await rt.execute(graph);
    lossBits.add(toBase64(r.outputs.loss.data));
    live.push(hooks.webgl2Stats().liveTextures);
  }
  const session = await rt.prepare(graph, {});
  await session.run(3);
  const withSession = hooks.webgl2Stats();
  session.dispose();
  const afterSession = hooks.webgl2Stats();
  rt.dispose();
  return { live, chain: await chainTextures(), distinctLosses: lossBits.size, withSession,
    afterSession, afterDispose: hooks.webgl2Stats() };
}

/**
 * With a free-texture budget of 0 bytes, nothing stays pooled after an execute; with 64 KiB,
 * graphs of ever-new shapes leave at most 64 KiB of free textures behind.
 */
export async function poolBudget() {
  const out = {};
  for (const budget of [0, 65536]) {
    const hooks = { webgl2PoolBytes: budget };
    const rt = await createRuntime({ ...SOFT, hooks });
    const after = [];
    for (let n = 1000; n < 11000; n += 1000) {
      const r = await rt.execute({ version: 1, nodes: [{ id: 0, op: 'full', shape: [n], value: 3 },
        { id: 1, op: 'mul', a: 0, b: 0 }], outputs: [{ name: 'y', id: 1 }] });
      const { liveTextures, freeBytes, created } = hooks.webgl2Stats();
      after.push({ n, liveTextures, freeBytes, created, allNine: r.outputs.y.data.every((v) => v === 9) });
    }
    rt.dispose();
    out[budget] = after;
  }
  return out;
}

/** Textures created by a chain of 20 elementwise ops on one shape (a fresh backend). */
async function chainTextures() {
  const hooks = {};
  const rt = await createRuntime({ ...SOFT, hooks });
  const nodes = [{ id: 0, op: 'input', shape: [64, 64], data: noise(4096, 5) }];
  const ops = ['relu', 'neg', 'sigmoid', 'tanh'];
  for (let i = 1; i <= 20; i++) nodes.push({ id: i, op: ops[i % 4], a: i - 1 });
  const graph = { version: 2, nodes, outputs: [{ name: 'y', id: 20 }] };
  const r = await rt.execute(graph);
  const out = { nodes: nodes.length, created: hooks.webgl2Stats().created, y: toBase64(r.outputs.y.data) };
  rt.dispose();
  const cpu = await createRuntime({ backend: 'cpu' });
  out.cpu = toBase64((await cpu.execute(graph)).outputs.y.data);
  cpu.dispose();
  return out;
}

/** Eight executes in flight at once on one runtime, then the same eight one by one. */
export async function concurrent() {
  const rt = await createRuntime(SOFT);
  const graphs = Array.from({ length: 8 }, (_, k) => ({ version: 2, nodes: [
    { id: 0, op: 'input', shape: [4, 16], data: noise(64, 40 + k) },
    { id: 1, op: 'softmax', a: 0 }, { id: 2, op: 'sum', a: 1, axis: 0 }, { id: 3, op: 'exp', a: 2 },
  ], outputs: [{ name: 'y', id: 3 }] }));
  const together = await Promise.all(graphs.map((g) => rt.execute(g)));
  const alone = [];
  for (const g of graphs) alone.push(await rt.execute(g));
  rt.dispose();
  const bits = (rs) => rs.map((r) => toBase64(r.outputs.y.data));
  return { together: bits(together), alone: bits(alone) };
}

// ---- context loss --------------------------------------------------------------------------

/** Loss after a good execute, during an execute in flight, and inside a session. */
export async function contextLoss() {
  const out = {};
  let hooks = {};
  let rt = await createRuntime({ ...SOFT, hooks });
  out.before = (await settle(rt.execute(GOOD_GRAPH))).value?.outputs.values.data.length ?? null;
  hooks.loseContext();
  out.after = (await settle(rt.execute(GOOD_GRAPH))).error ?? { ok: true };
  out.later = (await settle(rt.execute(GOOD_GRAPH))).error ?? { ok: true };
  rt.dispose();

  hooks = {};
  rt = await createRuntime({ ...SOFT, hooks });
  const inFlight = rt.execute(mlpGraph({ fed: false }));  // prepare has begun: textures exist
  hooks.loseContext();
  out.inFlight = (await settle(inFlight)).error ?? { ok: true };
  rt.dispose();

  hooks = {};
  rt = await createRuntime({ ...SOFT, hooks });
  const { graph, feeds, carry, step } = mlpSession();
  const session = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
  out.sessionFirst = (await settle(session.run([step(0)]))).error ?? { ok: true };
  hooks.loseContext();
  out.sessionLost = (await settle(session.run([step(1)]))).error ?? { ok: true };
  out.sessionAfter = (await settle(session.run([step(2)]))).error ?? { ok: true };
  session.dispose();
  rt.dispose();
  return out;
}

// ---- sessions ------------------------------------------------------------------------------

/** Layer sizes of the test MLP: batch, inputs, hidden units, classes. */
const SMALL = { B: 8, I: 12, H: 16, O: 4 };

/** One-hot targets for step s. @param {number} s */
function targets(s, { B, O } = SMALL) {
  const y = new Float32Array(B * O);
  for (let r = 0; r < B; r++) y[r * O + ((r * 7 + s * 3) % O)] = 1;
  return y;
}

/** Inputs and targets of step s. @param {number} s */
function inputsOfStep(s, d = SMALL) {
  return { x: noise(d.B * d.I, 100 + s), y: targets(s, d) };
}

/** Initial parameters, moments and step counter. */
function initialState({ I, H, O } = SMALL) {
  return {
    w1: noise(I * H, 1, 0.5), w2: noise(H * O, 2, 0.5),
    m1: new Float32Array(I * H), v1: new Float32Array(I * H),
    m2: new Float32Array(H * O), v2: new Float32Array(H * O), t: Float32Array.of(1),
  };
}

/**
 * An MLP training step: relu hidden layer, cross_entropy loss, backward pass, adam updates of
 * both weight matrices and the step counter. Ids: 0 x, 1 y, 2 w1, 3 w2, 4 m1, 5 v1, 6 m2, 7 v2, 8 t.
 * @param {{fed: boolean, dims?: typeof SMALL, state?: ReturnType<typeof initialState>,
 *   x?: Float32Array, y?: Float32Array}} o
 */
function mlpGraph({ fed, dims = SMALL, state = initialState(dims), x = inputsOfStep(0, dims).x,
  y = inputsOfStep(0, dims).y }) {
  const { B, I, H, O } = dims;
  const input = (id, shape, data) => (data === null ? { id, op: 'input', shape }
    : { id, op: 'input', shape, data });
  const nodes = [
    input(0, [B, I], fed ? null : x), input(1, [B, O], fed ? null : y),
    input(2, [I, H], state.w1), input(3, [H, O], state.w2),
    input(4, [I, H], state.m1), input(5, [I, H], state.v1),
    input(6, [H, O], state.m2), input(7, [H, O], state.v2), input(8, [1], state.t),
    { id: 10, op: 'matmul', a: 0, b: 2 }, { id: 11, op: 'relu', a: 10 },
    { id: 12, op: 'matmul', a: 11, b: 3 }, { id: 13, op: 'cross_entropy', a: 12, b: 1 },
    { id: 14, op: 'cross_entropy_grad', a: 12, b: 1 },
    { id: 15, op: 'transpose', a: 11 }, { id: 16, op: 'matmul', a: 15, b: 14 },
    { id: 17, op: 'transpose', a: 3 }, { id: 18, op: 'matmul', a: 14, b: 17 },
    { id: 19, op: 'positive', a: 10 }, { id: 20, op: 'mul', a: 18, b: 19 },
    { id: 21, op: 'transpose', a: 0 }, { id: 22, op: 'matmul', a: 21, b: 20 },
    { id: 23, op: 'adam_m', a: 4, b: 22, beta1: 0.9 }, { id: 24, op: 'adam_v', a: 5, b: 22, beta2: 0.999 },
    { id: 25, op: 'adam_update', a: 2, b: 23, c: 24, t: 8, lr: 0.01 },
    { id: 26, op: 'adam_m', a: 6, b: 16 }, { id: 27, op: 'adam_v', a: 7, b: 16 },
    { id: 28, op: 'adam_update', a: 3, b: 26, c: 27, t: 8, lr: 0.01 },
    { id: 29, op: 'full', shape: [1], value: 1 }, { id: 30, op: 'add', a: 8, b: 29 },
  ];
  const outputs = [['loss', 13], ['w1', 25], ['w2', 28], ['m1', 23], ['v1', 24], ['m2', 26],
    ['v2', 27], ['t', 30]].map(([name, id]) => ({ name, id }));
  return { version: 2, nodes, outputs };
}

/** The session form of mlpGraph: x and y fed, everything else carried. */
function mlpSession(dims = SMALL) {
  return {
    graph: mlpGraph({ fed: true, dims }),
    feeds: [0, 1],
    carry: { 2: 'w1', 3: 'w2', 4: 'm1', 5: 'v1', 6: 'm2', 7: 'v2', 8: 't' },
    step: (/** @type {number} */ s) => {
      const { x, y } = inputsOfStep(s, dims);
      return { 0: x, 1: y };
    },
  };
}

const STATE_NAMES = ['w1', 'w2', 'm1', 'v1', 'm2', 'v2', 't'];

/** @param {Record<string, Float32Array>} state */
const encodeState = (state) => Object.fromEntries(STATE_NAMES.map((n) => [n, toBase64(state[n])]));

/**
 * Five session steps vs five chained executes; run(8 steps) in one call vs eight runs; and
 * poisoning by a non-finite read-back.
 */
export async function sessions() {
  const rt = await createRuntime(SOFT);
  const { graph, feeds, carry, step } = mlpSession();
  const CARRIED = { w1: 2, w2: 3, m1: 4, v1: 5, m2: 6, v2: 7, t: 8 };

  // Chained executes: each step's outputs become the next graph's data.
  let state = initialState();
  const executeLosses = [];
  for (let s = 0; s < 5; s++) {
    const r = await rt.execute(mlpGraph({ fed: false, state, ...inputsOfStep(s) }));
    executeLosses.push(toBase64(r.outputs.loss.data));
    state = Object.fromEntries(STATE_NAMES.map((n) => [n, r.outputs[n].data]));
  }
  const executeState = encodeState(state);

  // The same five steps in one session, one run() each.
  const session = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
  const sessionLosses = [];
  for (let s = 0; s < 5; s++) sessionLosses.push(toBase64((await session.run([step(s)])).outputs.loss.data));
  const sessionState = {};
  for (const n of STATE_NAMES) sessionState[n] = toBase64(await session.download(CARRIED[n]));
  session.dispose();

  // Eight steps in one run() vs eight runs.
  const batched = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
  const eight = await batched.run(Array.from({ length: 8 }, (_, s) => step(s)));
  const batchedLoss = toBase64(eight.outputs.loss.data);
  const batchedState = {};
  for (const n of STATE_NAMES) batchedState[n] = toBase64(await batched.download(CARRIED[n]));
  batched.dispose();
  const single = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
  let lastLoss = null;
  for (let s = 0; s < 8; s++) lastLoss = (await single.run([step(s)])).outputs.loss.data;
  const singleState = {};
  for (const n of STATE_NAMES) singleState[n] = toBase64(await single.download(CARRIED[n]));
  single.dispose();

  const poisoning = await poisoningScenario(rt);
  rt.dispose();
  return {
    executeLosses, sessionLosses, executeState, sessionState,
    eight: { steps: eight.stats.steps, loss: batchedLoss, state: batchedState },
    single: { loss: toBase64(lastLoss), state: singleState },
    poisoning,
  };
}

/**
 * Packed parameters (packing.mjs) against every tensor in R32F (hook webgl2NoPacking): five
 * session steps of the MLP at dims whose weight matrices pack (hidden width a multiple of 4)
 * and at dims where only w1 does, plus one execute; the losses, every carried tensor
 * downloaded after the steps, the execute's outputs, and the shaders of one profiled step.
 * @param {{dims?: typeof SMALL}} [o]
 */
export async function packedParameters({ dims = SMALL } = {}) {
  const out = {};
  for (const [lane, extra] of [['packed', {}], ['plain', { webgl2NoPacking: true }]]) {
    const log = [];
    const hooks = { ...extra };
    const rt = await createRuntime({ ...SOFT, hooks });
    const { graph, feeds, carry, step } = mlpSession(dims);
    const session = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
    const losses = [];
    for (let s = 0; s < 5; s++) losses.push(toBase64((await session.run([step(s)])).outputs.loss.data));
    const CARRIED = { w1: 2, w2: 3, m1: 4, v1: 5, m2: 6, v2: 7, t: 8 };
    const state = {};
    for (const n of STATE_NAMES) state[n] = toBase64(await session.download(CARRIED[n]));
    session.dispose();
    const executed = await rt.execute(mlpGraph({ fed: false, dims }));
    const execute = Object.fromEntries(Object.entries(executed.outputs)
      .map(([n, o]) => [n, toBase64(o.data)]));
    rt.dispose();
    const prt = await createRuntime({ ...SOFT, hooks: { ...extra, webgl2Profile: log } });
    const ps = await prt.prepare(graph, { feeds, carry, outputs: ['loss'] });
    await ps.run([step(0)]);
    ps.dispose();
    prt.dispose();
    out[lane] = { losses, state, execute, passes: log.map((p) => `${p.key} (${p.n})`) };
  }
  return out;
}

/**
 * Carry by copy as well as by swap: one output carried into two inputs, a constant carried, a
 * data input carried. Three runs of one step; the outputs and carried inputs after each.
 */
export async function carryPaths() {
  const rt = await createRuntime(SOFT);
  const input = (id, data) => ({ id, op: 'input', shape: [3], data });
  const graph = { version: 2, nodes: [
    input(0, [1, 2, 3]), input(1, [10, 20, 30]), input(2, [0, 0, 0]), input(3, [7, 8, 9]),
    input(4, [0, 0, 0]), { id: 5, op: 'add', a: 0, b: 1 }, { id: 6, op: 'full', shape: [3], value: 5 },
    { id: 7, op: 'add', a: 2, b: 4 },
  ], outputs: [{ name: 's', id: 5 }, { name: 'five', id: 6 }, { name: 'd', id: 3 }, { name: 'ce', id: 7 }] };
  const s = await rt.prepare(graph, { carry: { 0: 's', 1: 's', 2: 'five', 4: 'd' }, outputs: ['s', 'ce'] });
  const steps = [];
  for (let i = 0; i < 3; i++) {
    const r = await s.run(1);
    const carried = {};
    for (const id of [0, 1, 2, 4]) carried[id] = [...await s.download(id)];
    steps.push({ s: [...r.outputs.s.data], ce: [...r.outputs.ce.data], carried });
  }
  s.dispose();
  rt.dispose();
  return { steps };
}

/** log of a fed value: a negative feed gives NaN, which poisons the session. @param {any} rt */
async function poisoningScenario(rt) {
  const graph = { version: 2, nodes: [{ id: 0, op: 'input', shape: [4] },
    { id: 1, op: 'input', shape: [4], data: [0, 0, 0, 0] }, { id: 2, op: 'log', a: 0 },
    { id: 3, op: 'add', a: 1, b: 2 }], outputs: [{ name: 'acc', id: 3 }] };
  const s = await rt.prepare(graph, { feeds: [0], carry: { 1: 'acc' }, outputs: ['acc'] });
  const ok = await settle(s.run([{ 0: [1, 2, 4, 8] }]));
  const poisoned = await settle(s.run([{ 0: [1, -1, 4, 8] }]));
  const afterRun = await settle(s.run([{ 0: [1, 2, 4, 8] }]));
  const afterDownload = await settle(s.download(1));
  s.dispose();
  const afterDispose = await settle(s.run([{ 0: [1, 2, 4, 8] }]));
  return {
    ok: ok.value ? [...ok.value.outputs.acc.data] : ok.error,
    poisoned: poisoned.error ?? { ok: true }, afterRun: afterRun.error ?? { ok: true },
    afterDownload: afterDownload.error ?? { ok: true }, afterDispose: afterDispose.error ?? { ok: true },
  };
}

// ---- timing (for docs/webgl2.md; not a test) ---------------------------------------------

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** @param {() => Promise<unknown>} fn @param {number} repeats */
async function timeIt(fn, repeats) {
  const ms = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/**
 * One MLP Adam step (784-256-10, batch 64 by default): per execute, per single-step run, and
 * per step at 8 steps per run, medians after a warm-up that compiles the shaders.
 */
export async function timing({ dims = { B: 64, I: 784, H: 256, O: 10 }, repeats = 5 } = {}) {
  const rt = await createRuntime(SOFT);
  const graph = mlpGraph({ fed: false, dims });
  await rt.execute(graph);
  const executeMs = await timeIt(() => rt.execute(graph), repeats);
  const { graph: sg, feeds, carry, step } = mlpSession(dims);
  const session = await rt.prepare(sg, { feeds, carry, outputs: ['loss'] });
  const one = [step(0)];
  const eight = Array.from({ length: 8 }, (_, s) => step(s));
  await session.run(one);
  const run1Ms = await timeIt(() => session.run(one), repeats);
  const run8Ms = await timeIt(() => session.run(eight), repeats);
  session.dispose();
  const out = { dims, repeats, executeMs, run1Ms, run8PerStepMs: run8Ms / 8, info: rt.info };
  rt.dispose();
  return out;
}

/**
 * Where the time of one MLP session step goes: every pass synced and timed (webgl2Profile),
 * the minimum over `repeats` steps per pass, after a warm-up. Syncing after each pass adds a
 * little per pass, so the sum is above an unprofiled step.
 */
export async function profile({ dims = { B: 64, I: 784, H: 256, O: 10 }, repeats = 5 } = {}) {
  const log = [];
  const rt = await createRuntime({ ...SOFT, hooks: { webgl2Profile: log } });
  const { graph, feeds, carry, step } = mlpSession(dims);
  const session = await rt.prepare(graph, { feeds, carry, outputs: ['loss'] });
  await session.run([step(0)]);
  /** @type {{key: string, n: number, ms: number}[]} */
  let passes = [];
  for (let r = 0; r < repeats; r++) {
    log.length = 0;
    await session.run([step(0)]);
    passes = log.map((p, i) => ({ ...p, ms: Math.min(p.ms, passes[i]?.ms ?? Infinity) }));
  }
  session.dispose();
  rt.dispose();
  return { dims, repeats, totalMs: passes.reduce((a, p) => a + p.ms, 0), passes };
}

// ---- dtypes ------------------------------------------------------------------------------

/**
 * float32/int32/uint32/bool inputs that are outputs (by value, fed, carried, swapped) round
 * trip through R32F / R32I / R32UI textures: the shared check of backends-js/test (it lists
 * what differed; the Python test asserts the list is empty).
 */
export async function typedRoundTrips() {
  const { typedRoundTrips: check } = await import('/backends-js/test/typed-roundtrip.mjs');
  const rt = await createRuntime(SOFT);
  try {
    return { problems: await check(rt) };
  } finally {
    rt.dispose();
  }
}

// ---- quotas ---------------------------------------------------------------------------------

/**
 * The runtime's quotas on WebGL2: device memory, textures ("buffers") and shader programs
 * ("pipelines") past the quota, and a graph that does not fit beside an open session's share,
 * each refused with LIMIT; the backend's counters before and after each refusal show whether
 * any GL work happened.
 */
export async function quotas() {
  const hooks = {};
  const rt = await createRuntime({ ...SOFT, hooks,
    quotas: { memoryBytes: 1000, buffers: 3, pipelines: 1 } });
  const chain = (n, ops) => ({ version: 2, nodes: [{ id: 0, op: 'full', shape: [n], value: 2 },
    ...ops.map((op, i) => ({ id: i + 1, op, a: i }))], outputs: [{ name: 'y', id: ops.length }] });
  const refused = async (graph, how = 'execute') => {
    const before = hooks.webgl2Stats();
    const got = await settle(how === 'execute' ? rt.execute(graph) : rt.prepare(graph));
    return { ...got.error ?? { code: 'RAN' }, before, after: hooks.webgl2Stats() };
  };
  const fits = await settle(rt.execute(chain(100, ['relu']))); // 800 bytes, 2 textures, 1 program
  const memory = await refused(chain(200, ['relu'])); // 1600 bytes
  const textures = await refused(chain(2, ['relu', 'relu', 'relu'])); // 4 textures
  const programs = await refused(chain(2, ['relu', 'exp']), 'prepare'); // 2 programs
  const session = await rt.prepare(chain(100, ['relu']));
  const used = rt.quotas.used;
  const held = await refused(chain(50, ['relu'])); // 400 bytes beside the session's 800
  session.dispose();
  const after = await settle(rt.execute(chain(50, ['relu'])));
  rt.dispose();
  return { fits: fits.value ? [...fits.value.outputs.y.data.slice(0, 2)] : fits.error,
    memory, textures, programs, held, used,
    after: after.value ? [...after.value.outputs.y.data.slice(0, 2)] : after.error };
}

/**
 * Cancellation between steps (hostile-input defect 14, `issues show 11`): a session run of
 * about 20 s of steps, disposed (the runtime or the session) at the run's first turn to the event
 * loop (the step gate yields with setTimeout(0) in a page or worker), ahead of the run's own
 * resumption, as a dispose() message that arrived meanwhile would: how it ended, how many turns
 * the run took (1: it stopped where the dispose() got in), and the session's state. Counted, not
 * timed.
 */
export async function cancelBetweenSteps() {
  const out = {};
  for (const how of ['runtime', 'session']) {
    const rt = await createRuntime(SOFT);
    const n = 4096;
    const graph = { version: 2, nodes: [{ id: 0, op: 'input', shape: [n], data: new Array(n).fill(0.5) },
      { id: 1, op: 'tanh', a: 0 }, { id: 2, op: 'exp', a: 1 }, { id: 3, op: 'neg', a: 2 }],
    outputs: [{ name: 'y', id: 3 }] };
    const session = await rt.prepare(graph, { carry: { 0: 'y' } });
    await session.run(20);
    const t0 = performance.now();
    await session.run(400); // steps queue GPU work and one read waits for it: time them in bulk
    const stepMs = (performance.now() - t0) / 400;
    const steps = Math.ceil(20000 / Math.max(stepMs, 0.01)); // never done before a first turn
    const real = globalThis.setTimeout;
    let yields = 0;
    globalThis.setTimeout = /** @type {any} */ ((fn, ms, ...args) => {
      if (!ms && ++yields === 1) real(() => (how === 'runtime' ? rt.dispose() : session.dispose()), 0);
      return real(fn, ms, ...args);
    });
    let ended;
    try {
      ended = await settle(session.run(steps), 60000);
    } finally {
      globalThis.setTimeout = real;
    }
    out[how] = { steps, yields, error: ended.error ?? null, state: session.state };
    rt.dispose();
  }
  return out;
}

/**
 * Protocol v4: a fed index out of range (index_select and index_add), never read through:
 * BACKEND naming the node and the position from the check pass, then STATE; in range, the
 * right values.
 */
export async function indexChecks() {
  const rt = await createRuntime(SOFT);
  const out = {};
  for (const op of ['index_select', 'index_add']) {
    const nodes = [{ id: 0, op: 'input', shape: [3, 2], data: [0, 1, 2, 3, 4, 5] },
      { id: 1, op: 'input', shape: [3], dtype: 'int32' },
      { id: 2, op: 'full', shape: [3, 2], value: 1 }];
    const node = { id: 3, op, a: 0, idx: 1, axis: 0, ...(op === 'index_add' ? { src: 2 } : {}) };
    const s = await rt.prepare({ version: 4, nodes: [...nodes, node], outputs: [{ name: 'y', id: 3 }] },
      { feeds: [1] });
    const ok = await settle(s.run([{ 1: [2, 0, 2] }]));
    const bad = await settle(s.run([{ 1: [1, 7, -1] }]));
    const later = await settle(s.run([{ 1: [0, 0, 0] }]));
    s.dispose();
    out[op] = { ok: ok.value ? [...ok.value.outputs.y.data] : ok.error, bad: bad.error, later: later.error };
  }
  rt.dispose();
  return out;
}
