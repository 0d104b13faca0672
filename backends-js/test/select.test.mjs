// The protocol-v4 selection ops (slice, slice_scatter, index_select, gather, index_add,
// scatter_add, concat, pad) on every node backend that has their kernels, against expected
// values written out here (float32 steps with Math.fround), and their run-time refusal of an
// index out of range: BACKEND naming the node and the position, and a poisoned session (STATE).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRuntime } from '../src/runtime.mjs';

const LANES = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json', import.meta.url), 'utf8'));
const SELECT = ['slice', 'slice_scatter', 'index_select', 'gather', 'index_add', 'scatter_add', 'concat', 'pad'];
// node backends with every v4 kernel (the others list them in lanes.json)
const BACKENDS = ['cpu', 'wasm'].filter((b) => SELECT.every((op) => !LANES[b][op]));
const f = Math.fround;

const runtimes = new Map();
after(() => { for (const rt of runtimes.values()) rt.dispose(); });
async function runtimeOf(backend) {
  if (!runtimes.has(backend)) runtimes.set(backend, await createRuntime({ backend }));
  return runtimes.get(backend);
}

const x34 = { id: 0, op: 'input', shape: [3, 4], data: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] };
const ints = (id, shape, data) => ({ id, op: 'input', shape, dtype: 'int32', data });

async function run(backend, nodes, out = nodes[nodes.length - 1].id) {
  const rt = await runtimeOf(backend);
  const r = await rt.execute({ version: 4, nodes, outputs: [{ name: 'y', id: out }] });
  return { shape: r.outputs.y.shape, data: [...r.outputs.y.data] };
}

for (const backend of BACKENDS) {
  test(`${backend}: slice with negative steps and clamped ends; slice_scatter`, async () => {
    const s = await run(backend, [x34, { id: 1, op: 'slice', a: 0, slices: [[null, null, -1], [-3, 99, 2]] }]);
    assert.deepEqual(s, { shape: [3, 2], data: [9, 11, 5, 7, 1, 3] });
    const src = { id: 1, op: 'input', shape: [2, 2], data: [-1, -2, -3, -4] };
    const w = await run(backend, [x34, src, { id: 2, op: 'slice_scatter', a: 0, src: 1, slices: [[2, null, -2], [3, 0, -2]] }]);
    assert.deepEqual(w.data, [0, -4, 2, -3, 4, 5, 6, 7, 8, -2, 10, -1]);
  });

  test(`${backend}: index_select and gather (int32 data too)`, async () => {
    const s = await run(backend, [x34, ints(1, [3], [3, 0, 3]), { id: 2, op: 'index_select', a: 0, idx: 1, axis: -1 }]);
    assert.deepEqual(s, { shape: [3, 3], data: [3, 0, 3, 7, 4, 7, 11, 8, 11] });
    const xi = ints(0, [2, 3], [10, 20, 30, -40, -50, 2 ** 31 - 1]);
    const g = await run(backend, [xi, ints(1, [2, 2], [2, 0, 1, 2]), { id: 2, op: 'gather', a: 0, idx: 1, axis: 1 }]);
    assert.deepEqual(g, { shape: [2, 2], data: [30, 10, -50, 2 ** 31 - 1] });
  });

  test(`${backend}: index_add and scatter_add add in ascending position of idx`, async () => {
    // 2^24 + 1 + 1 - 2^24: in index order the ones vanish (2), reordered they could survive
    const src = [16777216, 1, 1, -16777216];
    let want = 0;
    for (const v of src) want = f(want + v);
    const a = { id: 0, op: 'input', shape: [1], data: [0] };
    const s = { id: 2, op: 'input', shape: [4], data: src };
    const ia = await run(backend, [a, ints(1, [4], [0, 0, 0, 0]), s, { id: 3, op: 'index_add', a: 0, idx: 1, src: 2, axis: 0 }]);
    assert.deepEqual(ia.data, [want]);
    assert.equal(want, 0, 'the order matters for this data');
    const sa = await run(backend, [x34, ints(1, [2, 2], [2, 2, 0, 2]), { id: 2, op: 'input', shape: [2, 2], data: [1, 2, 3, 4] },
      { id: 3, op: 'scatter_add', a: 0, idx: 1, src: 2, axis: 0 }]);
    assert.deepEqual(sa.data, [0 + 3, 1, 2, 3, 4, 5, 6, 7, 8 + 1, 9 + 2 + 4, 10, 11]);
  });

  test(`${backend}: concat (the variadic operand) and pad`, async () => {
    const c = await run(backend, [x34, { id: 1, op: 'input', shape: [3, 1], data: [-1, -2, -3] },
      { id: 2, op: 'concat', tensors: [1, 0, 1], axis: 1 }]);
    assert.deepEqual(c, { shape: [3, 6], data: [-1, 0, 1, 2, 3, -1, -2, 4, 5, 6, 7, -2, -3, 8, 9, 10, 11, -3] });
    const p = await run(backend, [ints(0, [2], [5, 6]), { id: 1, op: 'pad', a: 0, widths: [[2, 1]], value: -2147483648 }]);
    assert.deepEqual(p, { shape: [5], data: [-2147483648, -2147483648, 5, 6, -2147483648] });
  });

  test(`${backend}: a fed index out of range is BACKEND naming the position; the session is poisoned`, async () => {
    const rt = await runtimeOf(backend);
    const graph = { version: 4, nodes: [x34, { id: 1, op: 'input', shape: [2], dtype: 'int32' },
      { id: 2, op: 'index_select', a: 0, idx: 1, axis: 0 }], outputs: [{ name: 'y', id: 2 }] };
    const s = await rt.prepare(graph, { feeds: [1] });
    const ok = await s.run([{ 1: [2, 0] }]);
    assert.deepEqual([...ok.outputs.y.data], [8, 9, 10, 11, 0, 1, 2, 3]);
    await assert.rejects(s.run([{ 1: [1, 3] }]), (e) => e.code === 'BACKEND' &&
      /node 2 \(index_select\): operand idx holds .*idx\[1\].*out of range for axis 0 of a \[3, 4\] \(valid 0\.\.2\)/.test(e.message));
    await assert.rejects(s.run([{ 1: [0, 0] }]), (e) => e.code === 'STATE');
    s.dispose();
  });
}

test('the v4 ops run on at least the cpu backend here', () => {
  assert.ok(BACKENDS.includes('cpu'), `backends with every v4 kernel: ${BACKENDS}`);
});
