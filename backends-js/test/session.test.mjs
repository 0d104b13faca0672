// Prepared sessions on the CPU backend: feeds, carry, resident/download, multi-step runs,
// N session steps == N chained executes bit for bit, poisoning, DISPOSED.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';

/** Rejects with a GpuLabError of `code` whose message matches `pattern`. */
async function rejects(promise, code, pattern = /./) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.name, 'GpuLabError');
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

/** Deterministic pseudo-random floats in [-scale, scale). */
function randoms(n, seed, scale = 1) {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

/** counter: x (carried, data [0, 10]) -> x + d (d fed per step); total = sum(x + d). */
const COUNTER = {
  version: 2,
  nodes: [
    { id: 0, op: 'input', shape: [2], data: [0, 10] },
    { id: 1, op: 'input', shape: [2] },
    { id: 2, op: 'add', a: 0, b: 1 },
    { id: 3, op: 'sum', a: 2 },
  ],
  outputs: [{ name: 'next', id: 2 }, { name: 'total', id: 3 }],
};

test('feeds, carry and outputs of the last step', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare(COUNTER, { feeds: [1], carry: { 0: 'next' } });
  assert.equal(s.backend, 'cpu');
  let r = await s.run([{ 1: [1, 2] }]);
  assert.deepEqual([...r.outputs.next.data], [1, 12]);
  assert.deepEqual([...r.outputs.total.data], [13]);
  r = await s.run([{ 1: new Float32Array([1, 1]) }, { 1: [0.5, -2] }, { 1: [3, 3] }]);
  // x: [1,12] -> [2,13] -> [2.5,11] -> [5.5,14]; outputs are the last step's only.
  assert.deepEqual([...r.outputs.next.data], [5.5, 14]);
  assert.deepEqual([...r.outputs.total.data], [19.5]);
  assert.equal(r.stats.steps, 3);
  assert.equal(r.backend, 'cpu');
  assert.deepEqual([...await s.download(0)], [5.5, 14], 'the carried input holds the last value');
  await rejects(s.download('total'), 'VALIDATION', /not resident/);
  s.dispose();
  rt.dispose();
});

test('feed and option errors are VALIDATION and do not poison', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  await rejects(rt.prepare(COUNTER), 'VALIDATION', /node 1 \(input\): has no data and is not fed/);
  await rejects(rt.prepare(COUNTER, { feeds: [0, 1] }), 'VALIDATION', /node 0 \(input\): is fed but has data/);
  await rejects(rt.prepare(COUNTER, { feeds: [1, 2] }), 'VALIDATION', /node 2 \(add\): is fed but is not an input/);
  await rejects(rt.prepare(COUNTER, { feeds: [1, 1] }), 'VALIDATION', /listed twice/);
  await rejects(rt.prepare(COUNTER, { feeds: [7] }), 'VALIDATION', /7 is not the id of a node/);
  await rejects(rt.prepare(COUNTER, { feeds: [1], carry: { 1: 'next' } }), 'VALIDATION', /node 1 \(input\): is carried but has no data/);
  await rejects(rt.prepare(COUNTER, { feeds: [1], carry: { 0: 'total' } }), 'VALIDATION', /shape \[\], but its shape is \[2\]/);
  await rejects(rt.prepare(COUNTER, { feeds: [1], carry: { 0: 'nope' } }), 'VALIDATION', /no output named "nope"/);
  await rejects(rt.prepare(COUNTER, { feeds: [1], resident: ['nope'] }), 'VALIDATION', /resident: no output named/);
  const s = await rt.prepare(COUNTER, { feeds: [1], carry: new Map([[0, 'next']]) });
  await rejects(s.run([{}]), 'VALIDATION', /node 1 \(input\): step 0: no feed given/);
  await rejects(s.run([{ 1: [1, 2, 3] }]), 'VALIDATION', /step 0: feed has 3 values, shape \[2\] needs 2/);
  await rejects(s.run([{ 1: [1, 2] }, { 1: [1, 2], 0: [0, 0] }]), 'VALIDATION', /step 1: "0" is not a fed input id/);
  await rejects(s.run([{ 1: 'ab' }]), 'VALIDATION', /feed must be a list of numbers, a typed array/);
  await rejects(s.run(2), 'VALIDATION', /needs one feed map per step/);
  await rejects(s.run([]), 'VALIDATION', /non-empty list/);
  assert.equal(s.state, 'ready');
  const r = await s.run([{ 1: [1, 1] }]);
  assert.deepEqual([...r.outputs.next.data], [1, 11], 'the refused calls changed nothing');
  rt.dispose();
});

test('resident outputs stay on the backend and are read with download', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const g = { version: 2, nodes: [{ id: 0, op: 'input', shape: [3], data: [1, 2, 3] },
    { id: 1, op: 'full', shape: [], value: 2 }, { id: 2, op: 'mul', a: 0, b: 1 }, { id: 3, op: 'mean', a: 2 }],
  outputs: [{ name: 'doubled', id: 2 }, { name: 'avg', id: 3 }] };
  const s = await rt.prepare(g, { carry: { 0: 'doubled' }, resident: ['doubled'] });
  const r = await s.run(3);
  assert.deepEqual(Object.keys(r.outputs), ['avg'], 'resident outputs are not read back');
  assert.deepEqual([...r.outputs.avg.data], [16]);
  assert.deepEqual([...await s.download('doubled')], [8, 16, 24]);
  assert.deepEqual([...await s.download(0)], [8, 16, 24]);
  await rejects(s.download(2), 'VALIDATION', /neither a resident output name nor a carried input id/);
  const only = await rt.prepare(g, { resident: ['doubled'], outputs: ['avg', 'doubled'] });
  const r2 = await only.run();
  assert.deepEqual(Object.keys(r2.outputs), ['avg', 'doubled']);
  rt.dispose();
});

test('carries move simultaneously: two inputs can swap', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const g = { version: 2, nodes: [{ id: 0, op: 'input', shape: [1], data: [1] },
    { id: 1, op: 'input', shape: [1], data: [2] }, { id: 2, op: 'sub', a: 0, b: 1 }],
  outputs: [{ name: 'a', id: 0 }, { name: 'b', id: 1 }, { name: 'd', id: 2 }] };
  const s = await rt.prepare(g, { carry: { 0: 'b', 1: 'a' } });
  let r = await s.run(1);
  assert.deepEqual([r.outputs.a.data[0], r.outputs.b.data[0], r.outputs.d.data[0]], [1, 2, -1]);
  r = await s.run(1);
  assert.deepEqual([r.outputs.a.data[0], r.outputs.b.data[0], r.outputs.d.data[0]], [2, 1, 1]);
  rt.dispose();
});

// ---------------------------------------------------------------- MLP with Adam

const I = 6;
const H = 5;
const O = 3;
const B = 8;
const PARAMS = [['W1', 2, [I, H]], ['b1', 3, [H]], ['W2', 4, [H, O]], ['b2', 5, [O]]];
/** moment names -> input id */
const MOMENTS = [['mW1', 6], ['vW1', 7], ['mb1', 8], ['vb1', 9], ['mW2', 10], ['vW2', 11], ['mb2', 12], ['vb2', 13]];
const shapeOfState = (name) => (name === 't' ? [1] : PARAMS.find(([p]) => p === name.replace(/^[mv](?=[Wb])/, ''))[2]);

/**
 * One training step of a 6-5-3 MLP (relu, cross_entropy, Adam) as a graph. `state` gives every
 * parameter, moment and t by name; x and y are fed (ids 0, 1) unless `batch` gives them as data.
 */
function mlpStep(state, batch = null) {
  const input = (id, name, shape) => ({ id, op: 'input', shape, data: state[name] });
  const nodes = [
    { id: 0, op: 'input', shape: [B, I], ...(batch ? { data: batch.x } : {}) },
    { id: 1, op: 'input', shape: [B, O], ...(batch ? { data: batch.y } : {}) },
    ...PARAMS.map(([name, id, shape]) => input(id, name, shape)),
    ...MOMENTS.map(([name, id]) => input(id, name, shapeOfState(name))),
    input(14, 't', [1]),
    { id: 20, op: 'matmul', a: 0, b: 2 }, { id: 21, op: 'add', a: 20, b: 3 },
    { id: 22, op: 'relu', a: 21 }, { id: 23, op: 'matmul', a: 22, b: 4 },
    { id: 24, op: 'add', a: 23, b: 5 }, { id: 25, op: 'cross_entropy', a: 24, b: 1 },
    { id: 26, op: 'cross_entropy_grad', a: 24, b: 1 }, { id: 27, op: 'transpose', a: 22 },
    { id: 28, op: 'matmul', a: 27, b: 26 }, { id: 29, op: 'sum', a: 26, axis: 0 },
    { id: 30, op: 'transpose', a: 4 }, { id: 31, op: 'matmul', a: 26, b: 30 },
    { id: 32, op: 'positive', a: 21 }, { id: 33, op: 'mul', a: 31, b: 32 },
    { id: 34, op: 'transpose', a: 0 }, { id: 35, op: 'matmul', a: 34, b: 33 },
    { id: 36, op: 'sum', a: 33, axis: 0 },
    { id: 52, op: 'full', shape: [1], value: 1 }, { id: 53, op: 'add', a: 14, b: 52 },
  ];
  const outputs = [{ name: 'loss', id: 25 }, { name: 't', id: 53 }];
  const grads = { W1: 35, b1: 36, W2: 28, b2: 29 };
  PARAMS.forEach(([name, id], k) => {
    const m = 40 + 3 * k;
    nodes.push({ id: m, op: 'adam_m', a: MOMENTS[2 * k][1], b: grads[name] },
      { id: m + 1, op: 'adam_v', a: MOMENTS[2 * k + 1][1], b: grads[name] },
      { id: m + 2, op: 'adam_update', a: id, b: m, c: m + 1, t: 14, lr: 0.05 });
    outputs.push({ name, id: m + 2 }, { name: `m${name}`, id: m }, { name: `v${name}`, id: m + 1 });
  });
  return { version: 2, nodes, outputs };
}

const STATE_NAMES = [...PARAMS.map(([n]) => n), ...MOMENTS.map(([n]) => n), 't'];
const STATE_IDS = Object.fromEntries([...PARAMS.map(([n, id]) => [n, id]), ...MOMENTS, ['t', 14]]);

function initialState() {
  const state = {};
  PARAMS.forEach(([name, , shape], k) => { state[name] = randoms(shape.reduce((p, d) => p * d, 1), 7 + k, 0.7); });
  for (const [name] of MOMENTS) state[name] = new Array(shapeOfState(name).reduce((p, d) => p * d, 1)).fill(0);
  state.t = [1];
  return state;
}

function batches(n) {
  return Array.from({ length: n }, (_, s) => {
    const labels = randoms(B, 100 + s).map((v) => Math.floor((v + 1) * 1.5) % O);
    const y = new Array(B * O).fill(0);
    labels.forEach((c, r) => { y[r * O + c] = 1; });
    return { x: randoms(B * I, 50 + s, 2), y };
  });
}

/** Five chained executes, each fed the previous step's outputs as data. */
async function chainedExecutes(rt, steps) {
  let state = initialState();
  let loss;
  for (const batch of steps) {
    const r = await rt.execute(mlpStep(state, batch));
    state = Object.fromEntries(STATE_NAMES.map((n) => [n, r.outputs[n].data]));
    loss = r.outputs.loss.data;
  }
  return { state, loss };
}

const sameBits = (a, b, what) => {
  assert.equal(a.length, b.length, what);
  const ua = new Uint32Array(Float32Array.from(a).buffer);
  const ub = new Uint32Array(Float32Array.from(b).buffer);
  assert.deepEqual(ua, ub, `${what} differs`);
};

test('five session steps equal five chained executes bit for bit (MLP + Adam)', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const steps = batches(5);
  const chained = await chainedExecutes(rt, steps);
  assert.ok(Number.isFinite(chained.loss[0]));
  const carry = Object.fromEntries(STATE_NAMES.map((n) => [STATE_IDS[n], n]));
  const feedsOf = (b) => ({ 0: b.x, 1: b.y });
  // (a) one run with five steps; (b) five runs of one step.
  for (const split of [false, true]) {
    const s = await rt.prepare(mlpStep(initialState()), { feeds: [0, 1], carry,
      resident: STATE_NAMES, outputs: ['loss'] });
    let r;
    if (split) for (const b of steps) r = await s.run([feedsOf(b)]);
    else r = await s.run(steps.map(feedsOf));
    sameBits(r.outputs.loss.data, chained.loss, 'loss');
    for (const n of STATE_NAMES) {
      sameBits(await s.download(STATE_IDS[n]), chained.state[n], `${n} (carried input)`);
      sameBits(await s.download(n), chained.state[n], `${n} (resident output)`);
    }
    s.dispose();
  }
  // The training moved the weights: the comparison is not between two unchanged states.
  const before = initialState();
  assert.notDeepEqual([...chained.state.W1], before.W1.map(Math.fround));
  assert.deepEqual([...chained.state.t], [6]);
  rt.dispose();
});

const SQRT = { version: 2, nodes: [{ id: 0, op: 'input', shape: [2] }, { id: 1, op: 'sqrt', a: 0 },
  { id: 2, op: 'input', shape: [2], data: [1, 1] }, { id: 3, op: 'add', a: 2, b: 2 }],
outputs: [{ name: 'root', id: 1 }, { name: 'acc', id: 3 }] };

test('a non-finite read-back poisons the session: BACKEND, then STATE, dispose, DISPOSED', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare(SQRT, { feeds: [0], carry: { 2: 'acc' }, resident: ['acc'] });
  const ok = await s.run([{ 0: [4, 9] }]);
  assert.deepEqual([...ok.outputs.root.data], [2, 3]);
  await rejects(s.run([{ 0: [4, -1] }]), 'BACKEND', /non-finite value in output "root" at index 1 \(NaN\)/);
  assert.equal(s.state, 'poisoned');
  await rejects(s.run([{ 0: [4, 9] }]), 'STATE', /poisoned.*non-finite/);
  await rejects(s.download('acc'), 'STATE');
  s.dispose();
  assert.equal(s.state, 'disposed');
  await rejects(s.run([{ 0: [4, 9] }]), 'DISPOSED');
  await rejects(s.download('acc'), 'DISPOSED');
  s.dispose();
  // The runtime is not affected: execute still returns non-finite values as they are.
  const r = await rt.execute({ ...SQRT, nodes: [{ id: 0, op: 'input', shape: [2], data: [-1, 1] }, ...SQRT.nodes.slice(1)] });
  assert.ok(Number.isNaN(r.outputs.root.data[0]));
  rt.dispose();
});

test('a non-finite carried value poisons at download', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const g = { version: 2, nodes: [{ id: 0, op: 'input', shape: [1], data: [1e30] },
    { id: 1, op: 'mul', a: 0, b: 0 }, { id: 2, op: 'full', shape: [], value: 0 }],
  outputs: [{ name: 'sq', id: 1 }, { name: 'zero', id: 2 }] };
  const s = await rt.prepare(g, { carry: { 0: 'sq' }, outputs: ['zero'] });
  await s.run(2);
  await rejects(s.download(0), 'BACKEND', /non-finite value in download of 0/);
  await rejects(s.run(1), 'STATE');
  rt.dispose();
});

test('an injected backend error poisons the session with BACKEND (cause kept)', async () => {
  const hooks = {};
  const rt = await createRuntime({ backend: 'cpu', hooks });
  const s = await rt.prepare(COUNTER, { feeds: [1], carry: { 0: 'next' } });
  await s.run([{ 1: [1, 1] }]);
  hooks.failNextRun = 'simulated device loss';
  await assert.rejects(s.run([{ 1: [1, 1] }]), (err) => {
    assert.equal(err.code, 'BACKEND');
    assert.match(err.message, /backend failed during run: Error: test hook failNextRun: simulated device loss/);
    assert.ok(err.cause instanceof Error);
    return true;
  });
  assert.equal(hooks.failNextRun, false, 'the hook fires once');
  await rejects(s.run([{ 1: [1, 1] }]), 'STATE', /simulated device loss/);
  await rejects(s.download(0), 'STATE');
  s.dispose();
  await rejects(s.run([{ 1: [1, 1] }]), 'DISPOSED');
  // A new session on the same runtime works.
  const fresh = await rt.prepare(COUNTER, { feeds: [1] });
  assert.deepEqual([...(await fresh.run([{ 1: [1, 1] }])).outputs.next.data], [1, 11]);
  rt.dispose();
});

test('a program that throws during download poisons too', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare(COUNTER, { feeds: [1], carry: { 0: 'next' } });
  s.parts.program.download = async () => { throw new RangeError('map failed'); };
  await rejects(s.download(0), 'BACKEND', /download: RangeError: map failed/);
  await rejects(s.run([{ 1: [1, 1] }]), 'STATE');
  rt.dispose();
});

test('disposing the runtime disposes its sessions', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare(COUNTER, { feeds: [1] });
  rt.dispose();
  assert.equal(s.state, 'disposed');
  await rejects(s.run([{ 1: [1, 1] }]), 'DISPOSED');
});

test('concurrent calls run in order and see a poisoning', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare(SQRT, { feeds: [0] });
  const results = await Promise.allSettled([s.run([{ 0: [1, 1] }]), s.run([{ 0: [-1, 1] }]), s.run([{ 0: [1, 1] }])]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected']);
  assert.equal(results[1].reason.code, 'BACKEND');
  assert.equal(results[2].reason.code, 'STATE');
  rt.dispose();
});
