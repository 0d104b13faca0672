// What a webgl2 program fuses and stores packed, decided without a GL context (fusion.mjs,
// packing.mjs over the registered webgl2 kernels): the MLP training step of the browser
// benchmark (x fed, parameters and moments carried).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateGraph } from '../src/validate.mjs';
import '../src/backends/webgl2.mjs';
import { absorbedNodes, foldedTransposes } from '../src/backends/webgl2/fusion.mjs';
import { packedNodes } from '../src/backends/webgl2/packing.mjs';

/** The MLP step with biases: 0 x [8, 12] (fed), 1 y, 2 w1 [12, H], 3 b1, 4 w2 [H, 4], 5 t, moments 6..9. */
function mlp(H) {
  const input = (id, shape) => ({ id, op: 'input', shape, data: new Array(shape.reduce((a, b) => a * b, 1)).fill(0.5) });
  const nodes = [
    { id: 0, op: 'input', shape: [8, 12] }, { id: 1, op: 'input', shape: [8, 4] },
    input(2, [12, H]), input(3, [H]), input(4, [H, 4]), input(5, [1]),
    input(6, [12, H]), input(7, [12, H]), input(8, [H, 4]), input(9, [H, 4]),
    { id: 10, op: 'matmul', a: 0, b: 2 }, { id: 11, op: 'add', a: 10, b: 3 },
    { id: 12, op: 'relu', a: 11 }, { id: 13, op: 'matmul', a: 12, b: 4 },
    { id: 14, op: 'cross_entropy', a: 13, b: 1 }, { id: 15, op: 'cross_entropy_grad', a: 13, b: 1 },
    { id: 16, op: 'transpose', a: 12 }, { id: 17, op: 'matmul', a: 16, b: 15 },
    { id: 18, op: 'transpose', a: 4 }, { id: 19, op: 'matmul', a: 15, b: 18 },
    { id: 20, op: 'positive', a: 11 }, { id: 21, op: 'mul', a: 19, b: 20 },
    { id: 22, op: 'transpose', a: 0 }, { id: 23, op: 'matmul', a: 22, b: 21 },
    { id: 24, op: 'adam_m', a: 6, b: 23 }, { id: 25, op: 'adam_v', a: 7, b: 23 },
    { id: 26, op: 'adam_update', a: 2, b: 24, c: 25, t: 5, lr: 0.01 },
    { id: 27, op: 'adam_m', a: 8, b: 17 }, { id: 28, op: 'adam_v', a: 9, b: 17 },
    { id: 29, op: 'adam_update', a: 4, b: 27, c: 28, t: 5, lr: 0.01 },
  ];
  const outputs = [['loss', 14], ['w1', 26], ['m1', 24], ['v1', 25], ['w2', 29], ['m2', 27], ['v2', 28]]
    .map(([name, id]) => ({ name, id }));
  return validateGraph({ version: 2, nodes, outputs });
}

function plan(checked, carry, options = {}) {
  const nodes = new Map(checked.nodes.map((n) => [n.id, n]));
  const pinned = new Set([...checked.outputs.map((o) => o.id), 0, 1, ...carry.keys(), ...carry.values()]);
  for (const n of checked.nodes) if (n.op === 'input') pinned.add(n.id);
  const opts = { flatMatmul: false, blockRows: 8, packing: true, epilogue: true, ...options };
  const g = { order: checked.order, nodes, pinned, options: opts };
  const folded = foldedTransposes(g);
  const absorbed = absorbedNodes(g, folded);
  const packed = packedNodes(g, absorbed, folded, carry, new Set(), { maxTextureSize: 8192, options: opts });
  return { folded, absorbed, packed: [...packed].sort((a, b) => a - b) };
}

const CARRY = new Map([[2, 26], [6, 24], [7, 25], [4, 29], [8, 27], [9, 28]]);

test('the MLP step: transposes folded, Adam and the epilogues absorb, x / w1 / w2 and moments packed', () => {
  const { folded, absorbed, packed } = plan(mlp(16), CARRY);
  assert.deepEqual([...folded.keys()].sort((a, b) => a - b), [16, 18, 22]);
  // adds / muls take their matmul (10 into 11, 19 into 21); the updates their moments and the
  // matmul gradient 23; 17 feeds two moments of the second update, which absorb it too
  assert.equal(absorbed.get(10), 11);
  assert.equal(absorbed.get(19), 21);
  assert.equal(absorbed.get(23), 26);
  assert.deepEqual([24, 25].map((i) => absorbed.get(i)), [26, 26]);
  assert.deepEqual(packed, [0, 2, 4, 6, 7, 8, 9, 24, 25, 26, 27, 28, 29]);
});

test('packing follows the shapes, the carry and the hooks', () => {
  // H = 18: w1 and its moments cannot pack (18 % 4); w2 [18, 4] still does
  assert.deepEqual(plan(mlp(18), CARRY).packed, [0, 4, 8, 9, 27, 28, 29]);
  // m1's update carried into two inputs (m1 and v1): carried by a copy, so it cannot pack,
  // nor its group (w1's update, v1's), nor the inputs they are carried into (they swap)
  const copied = new Map([...CARRY, [7, 24]]);
  assert.deepEqual(plan(mlp(16), copied).packed, [0, 4, 8, 9, 27, 28, 29]);
  assert.deepEqual(plan(mlp(16), CARRY, { packing: false }).packed, []);
  const plain = plan(mlp(16), CARRY, { epilogue: false });
  assert.equal(plain.absorbed.has(10), false);
  assert.equal(plain.absorbed.has(19), false);
});
