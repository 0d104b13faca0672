// Prepared sessions on the wasm backend, through the runtime: N session steps equal N chained
// executes bit for bit (the MLP Adam step of src/models/mlp.mjs), carries (pointer swaps and
// staged copies), resident downloads, and poisoning by a non-finite read-back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { mlpData, mlpStepGraph } from '../src/models/mlp.mjs';

const bits = (a) => Array.from(new Uint32Array(Float32Array.from(a).buffer));
const PARAMS = ['w1', 'b1', 'w2', 'b2'];
const STEPS = 5;

/** STEPS executes, each starting from the previous one's parameters and moments. */
async function chainedExecutes(rt, data) {
  let state = { ...data };
  let moments;
  const losses = [];
  let last;
  for (let s = 0; s < STEPS; s++) {
    const { graph } = mlpStepGraph(state, { step: s + 1, batch: s, moments });
    last = (await rt.execute(graph)).outputs;
    losses.push(last.loss.data[0]);
    state = { ...data, ...Object.fromEntries(PARAMS.map((p) => [p, last[`${p}_`].data])) };
    moments = Object.fromEntries(PARAMS.map((p) => [p, { m: last[`m_${p}_`].data, v: last[`v_${p}_`].data }]));
  }
  return { losses, last };
}

test('five session steps == five chained executes, bit for bit (MLP 784-256-10, Adam)', async () => {
  const rt = await createRuntime({ backend: 'wasm' });
  const data = mlpData({ seed: 3, batches: STEPS });
  const want = await chainedExecutes(rt, data);
  assert.ok(want.losses[STEPS - 1] < want.losses[0], `training reduces the loss: ${want.losses}`);

  const { graph, carry, feeds, ids } = mlpStepGraph(data, { feedXY: true });
  const resident = graph.outputs.map((o) => o.name).filter((n) => n !== 'loss');
  const feed = (s) => ({ [ids.x]: data.xs[s], [ids.y]: data.ys[s] });
  // one step per run
  const single = await rt.prepare(graph, { feeds, carry, resident, outputs: ['loss'] });
  const losses = [];
  for (let s = 0; s < STEPS; s++) losses.push((await single.run([feed(s)])).outputs.loss.data[0]);
  assert.deepEqual(bits(losses), bits(want.losses), 'per-step losses');
  for (const name of resident) {
    assert.deepEqual(bits(await single.download(name)), bits(want.last[name].data), `${name} after ${STEPS} steps`);
  }
  // the carried input holds the same value as the output it is carried from
  assert.deepEqual(bits(await single.download(ids.w1)), bits(want.last.w1_.data), 'carried input w1');
  single.dispose();
  // all steps in one run
  const batched = await rt.prepare(graph, { feeds, carry, resident, outputs: ['loss'] });
  const r = await batched.run(Array.from({ length: STEPS }, (_, s) => feed(s)));
  assert.deepEqual(bits(r.outputs.loss.data), bits([want.losses[STEPS - 1]]), 'last loss of one 5-step run');
  for (const name of resident) {
    assert.deepEqual(bits(await batched.download(name)), bits(want.last[name].data), `${name} (one run)`);
  }
  batched.dispose();
  rt.dispose();
});

test('a NaN fed into the MLP poisons the session: BACKEND, then STATE, then DISPOSED', async () => {
  const rt = await createRuntime({ backend: 'wasm' });
  const data = mlpData({ seed: 4, batches: 1 });
  const { graph, carry, feeds, ids } = mlpStepGraph(data, { feedXY: true });
  const session = await rt.prepare(graph, { feeds, carry, resident: ['w1_'], outputs: ['loss'] });
  const ok = { [ids.x]: data.xs[0], [ids.y]: data.ys[0] };
  assert.ok(Number.isFinite((await session.run([ok])).outputs.loss.data[0]));
  const bad = data.ys[0].slice();
  bad[3] = NaN; // a NaN target makes the loss NaN (a NaN in x would be zeroed by relu)
  await assert.rejects(session.run([{ [ids.x]: data.xs[0], [ids.y]: bad }]),
    (err) => err.code === 'BACKEND' && /non-finite/.test(err.message));
  await assert.rejects(session.run([ok]), (err) => err.code === 'STATE');
  await assert.rejects(session.download('w1_'), (err) => err.code === 'STATE');
  session.dispose();
  await assert.rejects(session.run([ok]), (err) => err.code === 'DISPOSED');
  rt.dispose();
});

test('carries apply all at once: two inputs swap values, a counter counts', async () => {
  const rt = await createRuntime({ backend: 'wasm' });
  const graph = { version: 2, nodes: [
    { id: 0, op: 'input', shape: [2], data: [1, 2] },
    { id: 1, op: 'input', shape: [2], data: [3, 4] },
    { id: 2, op: 'add', a: 0, b: 1 },
    { id: 3, op: 'input', shape: [1], data: [0] },
    { id: 4, op: 'full', shape: [1], value: 1 },
    { id: 5, op: 'add', a: 3, b: 4 },
    { id: 6, op: 'mul', a: 0, b: 4 },
  ], outputs: [{ name: 'a', id: 0 }, { name: 'b', id: 1 }, { name: 'sum', id: 2 },
    { name: 'count', id: 5 }, { name: 'a1', id: 6 }] };
  const s = await rt.prepare(graph, { carry: { 0: 'b', 1: 'a1', 3: 'count' }, resident: ['count'],
    outputs: ['a', 'b', 'sum'] });
  const seen = [];
  for (let i = 0; i < 3; i++) {
    const r = (await s.run(1)).outputs;
    seen.push([...r.a.data, ...r.b.data, ...r.sum.data]);
  }
  // the read-back is the values the last step used; its carry then swaps a and b
  assert.deepEqual(seen, [[1, 2, 3, 4, 4, 6], [3, 4, 1, 2, 4, 6], [1, 2, 3, 4, 4, 6]]);
  assert.deepEqual([...await s.download('count')], [3]);
  assert.deepEqual([...await s.download(3)], [3]);
  assert.deepEqual([...(await s.run(4)).outputs.sum.data], [4, 6]);
  assert.deepEqual([...await s.download('count')], [7]);
  s.dispose();
  rt.dispose();
});

test('a constant carried into an input is copied, so the constant keeps its value', async () => {
  const rt = await createRuntime({ backend: 'wasm' });
  const graph = { version: 2, nodes: [
    { id: 0, op: 'input', shape: [2], data: [5, 5] },
    { id: 1, op: 'full', shape: [2], value: 7 },
    { id: 2, op: 'add', a: 0, b: 1 },
  ], outputs: [{ name: 'seven', id: 1 }, { name: 's', id: 2 }] };
  const s = await rt.prepare(graph, { carry: { 0: 'seven' }, outputs: ['s'] });
  const sums = [];
  for (let i = 0; i < 3; i++) sums.push([...(await s.run(1)).outputs.s.data]);
  assert.deepEqual(sums, [[12, 12], [14, 14], [14, 14]]);
  s.dispose();
  rt.dispose();
});
