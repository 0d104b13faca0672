// Shape rules: broadcasting, batched matmul, reductions, reshape with -1, permute, through the
// validator (which runs them by each op's shape_rule) and the helpers directly.
import { NODE_SHAPE_RULES } from '../src/wgsl-op.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateGraph } from '../src/validate.mjs';
import { SHAPE_RULES, broadcastShapes, numel, normalizeAxis } from '../src/shapes.mjs';
import { table } from '../src/optable.mjs';

const LATEST = Math.max(...table.protocol_versions);

/** Shape of node 9 = op(inputs of the given shapes) with attrs, via the validator. */
function shapeOf(op, shapes, attrs = {}) {
  const names = ['a', 'b', 'c', 't'];
  const nodes = shapes.map((shape, i) => ({ id: i, op: 'full', shape, value: 1 }));
  const node = { id: 9, op, ...attrs };
  shapes.forEach((_, i) => { node[names[i]] = i; });
  const checked = validateGraph({ version: LATEST, nodes: [...nodes, node], outputs: [{ name: 'o', id: 9 }] });
  return checked.byId.get(9).shape;
}

/** The validator refuses op(shapes) with VALIDATION. */
function refused(op, shapes, attrs = {}) {
  assert.throws(() => shapeOf(op, shapes, attrs), (e) => e.code === 'VALIDATION' && e.node === 9);
}

test('every shape_rule of the op table has a rule function', () => {
  const rules = new Set(Object.values(table.ops).map((o) => o.shape_rule));
  // wgsl and wgsl_output read their operand nodes: wgsl-op.mjs NODE_SHAPE_RULES
  for (const r of rules) assert.equal(typeof (SHAPE_RULES[r] ?? NODE_SHAPE_RULES[r]), 'function', r);
});

test('numel and axis normalization', () => {
  assert.equal(numel([]), 1);
  assert.equal(numel([2, 3, 4]), 24);
  assert.equal(normalizeAxis(-1, 3), 2);
  assert.equal(normalizeAxis(-3, 3), 0);
  assert.equal(normalizeAxis(3, 3), null);
  assert.equal(normalizeAxis(-4, 3), null);
});

test('broadcast: NumPy rules, right-aligned, up to rank 4', () => {
  assert.deepEqual(broadcastShapes([2, 3], [3]), [2, 3]);
  assert.deepEqual(broadcastShapes([2, 1], [1, 3]), [2, 3]);
  assert.deepEqual(broadcastShapes([], [4, 5]), [4, 5]);
  assert.deepEqual(broadcastShapes([5, 1, 4, 1], [3, 1, 6]), [5, 3, 4, 6]);
  assert.equal(broadcastShapes([2, 3], [2]), null);
  assert.equal(broadcastShapes([4, 3], [2, 3]), null);
  assert.deepEqual(shapeOf('add', [[2, 1, 3], [4, 1]]), [2, 4, 3]);
  assert.deepEqual(shapeOf('div', [[1], [7, 2]]), [7, 2]);
  assert.deepEqual(shapeOf('mul', [[], []]), []);
  refused('sub', [[2, 3], [3, 2]]);
});

test('matmul: batch axes broadcast, inner dimensions must agree', () => {
  assert.deepEqual(shapeOf('matmul', [[2, 3], [3, 5]]), [2, 5]);
  assert.deepEqual(shapeOf('matmul', [[2, 1, 3, 4], [5, 4, 6]]), [2, 5, 3, 6]);
  assert.deepEqual(shapeOf('matmul', [[7, 3, 4], [4, 2]]), [7, 3, 2]);
  assert.deepEqual(shapeOf('matmul', [[3, 4], [2, 4, 1]]), [2, 3, 1]);
  refused('matmul', [[2, 3], [2, 3]]);
  refused('matmul', [[3], [3, 2]]);
  refused('matmul', [[2, 3, 4], [3, 4, 5]]);
});

test('reduce: all or one axis, keepdim, negative axes', () => {
  assert.deepEqual(shapeOf('sum', [[2, 3, 4]]), []);
  assert.deepEqual(shapeOf('sum', [[2, 3, 4]], { keepdim: true }), [1, 1, 1]);
  assert.deepEqual(shapeOf('mean', [[2, 3, 4]], { axis: 1 }), [2, 4]);
  assert.deepEqual(shapeOf('mean', [[2, 3, 4]], { axis: -1, keepdim: true }), [2, 3, 1]);
  assert.deepEqual(shapeOf('sum', [[5]], { axis: 0 }), []);
  refused('sum', [[2, 3]], { axis: 2 });
  // a rank-0 tensor takes axis 0 or -1 (PyTorch), normalized to a reduction over all
  assert.deepEqual(shapeOf('mean', [[]], { axis: 0 }), []);
  assert.deepEqual(shapeOf('argmax', [[]], { axis: -1, keepdim: true }), []);
  refused('mean', [[]], { axis: 1 });
  refused('mean', [[]], { axis: -2 });
});

test('reshape: -1 resolved, element counts equal', () => {
  assert.deepEqual(shapeOf('reshape', [[2, 3, 4]], { shape: [-1, 4] }), [6, 4]);
  assert.deepEqual(shapeOf('reshape', [[2, 3, 4]], { shape: [4, 3, -1] }), [4, 3, 2]);
  assert.deepEqual(shapeOf('reshape', [[6]], { shape: [6] }), [6]);
  assert.deepEqual(shapeOf('reshape', [[1]], { shape: [] }), []);
  assert.deepEqual(shapeOf('reshape', [[]], { shape: [-1] }), [1]);
  refused('reshape', [[2, 3]], { shape: [4, -1] });
  refused('reshape', [[2, 3]], { shape: [7] });
});

test('permute, transpose and the remaining rules', () => {
  assert.deepEqual(shapeOf('permute', [[2, 3, 4]], { dims: [2, 0, 1] }), [4, 2, 3]);
  assert.deepEqual(shapeOf('permute', [[5]], { dims: [0] }), [5]);
  refused('permute', [[2, 3, 4]], { dims: [0, 1] });
  refused('permute', [[2, 3]], { dims: [-1, 0] });
  refused('permute', [[2, 3]], { dims: [1, 1] });
  assert.deepEqual(shapeOf('transpose', [[2, 3]]), [3, 2]);
  assert.deepEqual(shapeOf('transpose', [[4, 2, 3]]), [4, 3, 2]);
  refused('transpose', [[3]]);
  assert.deepEqual(shapeOf('softmax', [[2, 3]], { axis: 0 }), [2, 3]);
  assert.deepEqual(shapeOf('softmax', [[]]), []); // rank 0: axis -1 is its one element
  refused('softmax', [[]], { axis: 1 });
  assert.deepEqual(shapeOf('cross_entropy', [[4, 3], [4, 3]]), []);
  refused('cross_entropy', [[4, 3, 1], [4, 3, 1]]);
  assert.deepEqual(shapeOf('cross_entropy_grad', [[4, 3], [4, 3]]), [4, 3]);
  refused('cross_entropy_grad', [[4], [4]]);
  assert.deepEqual(shapeOf('gelu_grad', [[2, 2], [2, 2]]), [2, 2]);
  refused('gelu_grad', [[2, 2], [2]]);
  assert.deepEqual(shapeOf('adam_update', [[3], [3], [3], []]), [3]);
  assert.deepEqual(shapeOf('adam_update', [[3], [3], [3], [1]]), [3]);
  refused('adam_update', [[3], [3], [3], [1, 1]]);
  refused('adam_update', [[3], [3], [2], [1]]);
  assert.deepEqual(shapeOf('life', [[4, 5]]), [4, 5]);
  refused('life', [[4, 5, 1]]);
});

test('v4 selection rules: slice clamps as Python, selects empty axes; gather, concat, pad', () => {
  const g = (nodes, out) => validateGraph({ version: LATEST, nodes, outputs: [{ name: 'y', id: out }] });
  const x = { id: 0, op: 'input', shape: [5, 4], data: new Array(20).fill(0) };
  const i = { id: 1, op: 'input', shape: [2, 4], dtype: 'int32', data: new Array(8).fill(1) };
  const shapeOf = (node) => g([x, i, { id: 9, ...node }], 9).byId.get(9).shape;
  assert.deepEqual(shapeOf({ op: 'slice', a: 0, slices: [[-100, 100, 2], [null, null, -3]] }), [3, 2]);
  assert.deepEqual(shapeOf({ op: 'gather', a: 0, idx: 1, axis: 0 }), [2, 4]);
  assert.throws(() => shapeOf({ op: 'index_select', a: 0, idx: 1, axis: 1 }),
    { code: 'VALIDATION', node: 9, message: /operand idx must have rank 1, got idx \[2, 4\]/ });
  assert.deepEqual(shapeOf({ op: 'concat', tensors: [0, 0, 0], axis: -1 }), [5, 12]);
  assert.deepEqual(shapeOf({ op: 'pad', a: 0, widths: [[0, 0], [3, 1]] }), [5, 8]);
  assert.deepEqual(shapeOf({ op: 'slice', a: 0, slices: [[3, 1, 1], [null, null, 1]] }), [0, 4]);
  assert.throws(() => shapeOf({ op: 'concat', tensors: [0, 1], axis: 1 }),
    { code: 'VALIDATION', node: 9, message: /tensors\[1\] \[2, 4\] does not match/ });
});
