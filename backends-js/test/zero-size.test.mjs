// Zero-size tensors and rank-0 axes (docs/protocol.md "Zero-size tensors", "Rank-0 axes"):
// what the runtime lowers before a backend prepares a graph (lowering.mjs). A backend never
// sees an empty tensor; results over no element are the protocol's; sessions feed and carry
// empty tensors; a graph whose outputs are all empty prepares nothing at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { validateGraph } from '../src/validate.mjs';
import { lowerGraph, prepareLowered } from '../src/lowering.mjs';

const V = 8;
const out = (...ids) => ids.map((id) => ({ name: `o${id}`, id }));

/** A backend that records the checked graphs it is given and never runs anything. */
function recordingBackend() {
  const prepared = [];
  return {
    prepared,
    async prepare(checked, options) {
      prepared.push({ checked, options });
      return {
        async run(steps, readIds) {
          return new Map(readIds.map((id) => [id, new Float32Array(1)]));
        },
        async download() { return new Float32Array(1); },
        dispose() {},
      };
    },
  };
}

test('a backend is never given a zero-size tensor', async () => {
  const checked = validateGraph({ version: V, nodes: [
    { id: 0, op: 'input', shape: [0, 3], data: [] },
    { id: 1, op: 'sum', a: 0, axis: 0 },
    { id: 2, op: 'relu', a: 0 },
    { id: 3, op: 'input', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] },
    { id: 4, op: 'concat', tensors: [0, 3, 0], axis: 0 },
  ], outputs: out(1, 2, 4) });
  const backend = recordingBackend();
  const program = await prepareLowered(backend, checked, { feeds: [], carry: new Map(), keep: [] });
  assert.equal(backend.prepared.length, 1);
  const given = backend.prepared[0].checked;
  for (const node of given.nodes) assert.ok(!node.shape.includes(0), `node ${node.id} is empty`);
  assert.deepEqual(given.outputs.map((o) => o.id), [1, 4], 'the empty output is answered here');
  assert.equal(given.byId.get(1).op, 'input', 'a sum over no element is a constant');
  assert.deepEqual([...given.byId.get(1).data], [0, 0, 0]);
  assert.equal(given.byId.get(4).op, 'reshape', 'a concat of one non-empty operand is a copy');
  const values = await program.run([new Map()], [1, 2, 4]);
  assert.ok(values.get(2) instanceof Float32Array && values.get(2).length === 0);
});

test('a graph whose outputs are all empty prepares nothing on the backend', async () => {
  const checked = validateGraph({ version: V, nodes: [
    { id: 0, op: 'input', shape: [2, 0], dtype: 'int32', data: [] },
    { id: 1, op: 'abs', a: 0 },
  ], outputs: out(1) });
  const backend = recordingBackend();
  const program = await prepareLowered(backend, checked, { feeds: [], carry: new Map(), keep: [] });
  assert.equal(backend.prepared.length, 0);
  const values = await program.run([new Map()], [1]);
  assert.ok(values.get(1) instanceof Int32Array && values.get(1).length === 0);
});

test('a graph without empty tensors or rank-0 axes is not lowered', () => {
  const checked = validateGraph({ version: 2, nodes: [
    { id: 0, op: 'input', shape: [2], data: [1, 2] }, { id: 1, op: 'sum', a: 0, axis: 0 },
  ], outputs: out(1) });
  assert.equal(lowerGraph(checked), null);
});

test('rank-0 axes run on a [1] view, and reductions over them over all', () => {
  const checked = validateGraph({ version: V, nodes: [
    { id: 0, op: 'input', shape: [], data: [2.5] },
    { id: 1, op: 'softmax', a: 0, axis: 0 },
    { id: 2, op: 'argmax', a: 0, axis: -1, keepdim: true },
    { id: 3, op: 'input', shape: [], dtype: 'int32', data: [0] },
    { id: 4, op: 'gather', a: 0, idx: 3, axis: 0 },
  ], outputs: out(1, 2, 4) });
  const { checked: lowered } = lowerGraph(checked);
  for (const node of lowered.nodes) {
    if (node.attrs.axis !== undefined && node.attrs.axis !== null) {
      assert.ok(lowered.byId.get(node.operands[0]).shape.length > 0, `node ${node.id}: axis on rank 0`);
    }
  }
  assert.equal(lowered.byId.get(2).attrs.axis, null);
  assert.deepEqual(lowered.byId.get(1).shape, []);
  assert.equal(lowered.byId.get(1).op, 'reshape');
});

for (const backend of ['cpu', 'wasm']) {
  test(`${backend}: results over no element are the protocol's, every output of its dtype`, async () => {
    const rt = await createRuntime({ backend });
    const r = await rt.execute({ version: V, nodes: [
      { id: 0, op: 'input', shape: [0, 3], data: [] },
      { id: 1, op: 'sum', a: 0, axis: 0 },
      { id: 2, op: 'mean', a: 0 },
      { id: 3, op: 'input', shape: [2, 0], data: [] },
      { id: 4, op: 'matmul', a: 3, b: 0 },
      { id: 5, op: 'cross_entropy', a: 0, b: 0 },
      { id: 6, op: 'argmax', a: 0, axis: 1 },
      { id: 7, op: 'pad', a: 0, widths: [[1, 0], [0, 0]], value: -2 },
    ], outputs: out(1, 2, 4, 5, 6, 7) });
    assert.deepEqual([...r.outputs.o1.data], [0, 0, 0]);
    assert.ok(Number.isNaN(r.outputs.o2.data[0]));
    assert.deepEqual([...r.outputs.o4.data], [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(r.outputs.o4.shape, [2, 3]);
    assert.ok(Number.isNaN(r.outputs.o5.data[0]));
    assert.deepEqual(r.outputs.o6.shape, [0]);
    assert.ok(r.outputs.o6.data instanceof Int32Array && r.outputs.o6.data.length === 0);
    assert.deepEqual([...r.outputs.o7.data], [-2, -2, -2]);
    rt.dispose();
  });
}

test('a session feeds and carries empty tensors beside non-empty ones', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const s = await rt.prepare({ version: V, nodes: [
    { id: 0, op: 'input', shape: [0, 2] },
    { id: 1, op: 'input', shape: [3, 2], data: [0, 0, 0, 0, 0, 0] },
    { id: 2, op: 'concat', tensors: [0, 1], axis: 0 },
    { id: 3, op: 'input', shape: [3, 2] },
    { id: 4, op: 'add', a: 2, b: 3 },
    { id: 5, op: 'input', shape: [2, 0], data: [] },
    { id: 6, op: 'neg', a: 5 },
  ], outputs: [{ name: 'next', id: 4 }, { name: 'empty', id: 6 }] },
  { feeds: [0, 3], carry: { 1: 'next', 5: 'empty' } });
  const one = [1, 1, 1, 1, 1, 1];
  const r = await s.run([{ 0: [], 3: one }, { 0: new Float32Array(0), 3: one }]);
  assert.equal(r.stats.steps, 2);
  assert.deepEqual([...await s.download(1)], [2, 2, 2, 2, 2, 2]);
  assert.equal((await s.download(5)).length, 0);
  s.dispose();
  rt.dispose();
});
