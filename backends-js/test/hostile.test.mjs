// Issue 11 (hostile input), the JS half: each test is named by the review's defect number.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateGraph } from '../src/validate.mjs';
import { createRuntime } from '../src/runtime.mjs';
import { createPythonGPUAdapter } from '../src/python-adapter.mjs';

const graphOf = (nodes, outputs) => ({ version: 2, nodes, outputs: outputs ?? [{ name: 'y', id: nodes.at(-1).id }] });
const inp = (id, shape, data) => ({ id, op: 'input', shape, data: data ?? new Array(shape.reduce((a, b) => a * b, 1)).fill(0) });

/** Throws a GpuLabError of `code` naming `node` (and saying `says`). */
function refuses(graph, code, node, says = /./) {
  assert.throws(() => validateGraph(graph), (err) => {
    assert.equal(err.name, 'GpuLabError', String(err));
    assert.equal(err.code, code, err.message);
    assert.equal(err.node, node, err.message);
    assert.match(err.message, says);
    return true;
  });
}
const full = (shape) => ({ id: 0, op: 'full', shape, value: 1 });

test('defect 11: undefined and hole dimensions are VALIDATION (shape, dims, reshape)', () => {
  const dim = /not an integer|list of integers/;
  refuses(graphOf([full([undefined])]), 'VALIDATION', 0, dim);
  refuses(graphOf([full([2, undefined])]), 'VALIDATION', 0, dim);
  // eslint-disable-next-line no-sparse-arrays
  refuses(graphOf([full([, 2])]), 'VALIDATION', 0, dim);
  // eslint-disable-next-line no-sparse-arrays
  refuses(graphOf([full([2, 3]), { id: 1, op: 'permute', a: 0, dims: [1, , 0] }]), 'VALIDATION', 1, dim);
  refuses(graphOf([full([2, 3]), { id: 1, op: 'permute', a: 0, dims: [undefined, 0] }]), 'VALIDATION', 1, dim);
  // eslint-disable-next-line no-sparse-arrays
  refuses(graphOf([full([2, 3]), { id: 1, op: 'reshape', a: 0, shape: [, 6] }]), 'VALIDATION', 1, dim);
});

test('defect 17: an attribute given as undefined (Pyodide\'s None) is null, not absent', () => {
  // natively keepdim: None and beta1: None are VALIDATION; the page gets them as undefined
  refuses(graphOf([inp(0, [2, 3]), { id: 1, op: 'sum', a: 0, axis: 0, keepdim: undefined }]),
    'VALIDATION', 1);
  const adam = [inp(0, [2]), inp(1, [2]), inp(2, [2]), inp(3, [1]),
    { id: 4, op: 'adam_update', a: 0, b: 1, c: 2, t: 3, beta1: undefined }];
  refuses(graphOf(adam), 'VALIDATION', 4);
  refuses(graphOf([{ id: 0, op: 'input', shape: [2], data: undefined }]), 'VALIDATION', 0);
  // where null is allowed, undefined is too (axis: None natively)
  const ok = validateGraph(graphOf([inp(0, [2, 3]), { id: 1, op: 'sum', a: 0, axis: undefined }]));
  assert.deepEqual(ok.byId.get(1).shape, []);
});

test('defect 17: ids past 2^53 - 1 are VALIDATION (JS numbers would merge them)', () => {
  const big = 2 ** 53;
  refuses(graphOf([inp(big, [1])]), 'VALIDATION', null);
  refuses(graphOf([inp(0, [1]), { id: 1, op: 'relu', a: big + 2 }]), 'VALIDATION', 1);
  refuses(graphOf([inp(0, [1])], [{ name: 'y', id: big }]), 'VALIDATION', null);
  assert.equal(validateGraph(graphOf([inp(2 ** 53 - 1, [1])])).order[0], 2 ** 53 - 1);
});

/** Rejects with a GpuLabError of `code` whose message matches `pattern`. */
async function rejects(promise, code, pattern = /./) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

const PROTO = { version: 1, nodes: [{ id: 0, op: 'input', shape: [2], data: [1, 2] },
  { id: 1, op: 'relu', a: 0 }], outputs: [{ name: 'ok', id: 1 }, { name: '__proto__', id: 0 }] };

test('defect 4: an output named __proto__ is VALIDATION in execute, sessions and the adapter', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  await rejects(rt.execute(PROTO), 'VALIDATION', /__proto__.*reserved/);
  await rejects(rt.prepare(PROTO), 'VALIDATION', /__proto__.*reserved/);
  const adapter = createPythonGPUAdapter(null, rt, { allowExecute: true });
  await rejects(adapter.execute(PROTO), 'VALIDATION', /reserved/);
  await rejects(adapter.prepare(PROTO), 'VALIDATION', /reserved/);
  // what a Python dict gives the adapter: Object.fromEntries keeps '__proto__' as a key
  const fromPython = Object.fromEntries([['version', 1], ['nodes', PROTO.nodes],
    ['outputs', [Object.fromEntries([['name', '__proto__'], ['id', 0]])]]]);
  await rejects(adapter.execute(fromPython), 'VALIDATION', /reserved/);
  // other names that live on Object.prototype are ordinary outputs
  const names = ['constructor', 'toString', 'hasOwnProperty', 'valueOf'];
  const result = await rt.execute({ ...PROTO, outputs: names.map((name) => ({ name, id: 1 })) });
  assert.deepEqual(Object.keys(result.outputs).sort(), [...names].sort());
  assert.deepEqual([...result.outputs.constructor.data], [1, 2]);
  adapter.dispose();
  rt.dispose();
});
