// The protocol-v6 window ops (conv2d, max_pool2d, avg_pool2d, resize) on every node backend
// that has their kernels, against values worked out by hand here (the corpus checks them
// against the float64 reference, pylib/tests/test_conv_ops.py against torch and onnxruntime),
// and the refusals before any work: the MAC limit and the cost model.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRuntime } from '../src/runtime.mjs';
import { validateGraph } from '../src/validate.mjs';
import { graphCostS } from '../src/cost.mjs';

const LANES = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json', import.meta.url), 'utf8'));
const WINDOW = ['conv2d', 'max_pool2d', 'avg_pool2d', 'resize'];
const BACKENDS = ['cpu', 'wasm'].filter((b) => WINDOW.every((op) => !LANES[b][op]));

const runtimes = new Map();
after(() => { for (const rt of runtimes.values()) rt.dispose(); });
async function runtimeOf(backend) {
  if (!runtimes.has(backend)) runtimes.set(backend, await createRuntime({ backend }));
  return runtimes.get(backend);
}

// x: one 3x3 plane 1..9
const x = { id: 0, op: 'input', shape: [1, 1, 3, 3], data: [1, 2, 3, 4, 5, 6, 7, 8, 9] };

async function run(backend, nodes) {
  const rt = await runtimeOf(backend);
  const r = await rt.execute({ version: 6, nodes, outputs: [{ name: 'y', id: nodes[nodes.length - 1].id }] });
  return { shape: r.outputs.y.shape, data: [...r.outputs.y.data] };
}

for (const backend of BACKENDS) {
  test(`${backend}: conv2d with a bias, asymmetric padding, strides, groups`, async () => {
    const w = { id: 1, op: 'input', shape: [1, 1, 2, 2], data: [1, 0, 0, -1] };
    const b = { id: 2, op: 'input', shape: [1], data: [0.5] };
    // padding top 1, left 0, bottom 0, right 1: rows -1..2, columns 0..3
    const y = await run(backend, [x, w, b, { id: 3, op: 'conv2d', a: 0, w: 1, bias: [2], padding: [1, 0, 0, 1] }]);
    assert.deepEqual(y.shape, [1, 1, 3, 3]);
    // out[i][j] = x[i-1][j] - x[i][j+1] + 0.5 (missing taps add nothing)
    assert.deepEqual(y.data, [-1.5, -2.5, 0.5, -3.5, -3.5, 3.5, -3.5, -3.5, 6.5]);
    const s = await run(backend, [x, w, { id: 3, op: 'conv2d', a: 0, w: 1, bias: [], strides: [2, 2], padding: [0, 0, 1, 1] }]);
    assert.deepEqual(s, { shape: [1, 1, 2, 2], data: [1 - 5, 3, 7, 9] });
    // two groups (depthwise): channel 0 doubled, channel 1 negated
    const x2 = { id: 0, op: 'input', shape: [1, 2, 1, 2], data: [1, 2, 3, 4] };
    const wd = { id: 1, op: 'input', shape: [2, 1, 1, 1], data: [2, -1] };
    const d = await run(backend, [x2, wd, { id: 2, op: 'conv2d', a: 0, w: 1, bias: [], groups: 2 }]);
    assert.deepEqual(d.data, [2, 4, -3, -4]);
  });

  test(`${backend}: max_pool2d (padding never wins) and avg_pool2d both ways`, async () => {
    const neg = { ...x, data: x.data.map((v) => -v) };
    const m = await run(backend, [neg, { id: 1, op: 'max_pool2d', a: 0, kernel: [2, 2], padding: [1, 1, 0, 0] }]);
    assert.deepEqual(m, { shape: [1, 1, 3, 3], data: [-1, -1, -2, -1, -1, -2, -4, -4, -5] });
    const pool = { id: 1, op: 'avg_pool2d', a: 0, kernel: [2, 2], strides: [2, 2], padding: [1, 1, 0, 0] };
    const ex = await run(backend, [x, pool]);
    assert.deepEqual(ex.data, [1, 2.5, 5.5, 7]);
    const inc = await run(backend, [x, { ...pool, count_include_pad: true }]);
    assert.deepEqual(inc.data, [0.25, 1.25, 2.75, 7]);
  });

  test(`${backend}: resize nearest (ONNX modes) and linear`, async () => {
    const row = { id: 0, op: 'input', shape: [1, 1, 1, 3], data: [10, 20, 30] };
    const r = (attrs) => run(backend, [row, { id: 1, op: 'resize', a: 0, size: [1, 6], ...attrs }]);
    // half_pixel 3 -> 6: sources -0.25, 0.25, 0.75, 1.25, 1.75, 2.25
    assert.deepEqual((await r({})).data, [10, 10, 20, 20, 30, 30]);
    assert.deepEqual((await r({ coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' })).data,
      [10, 10, 20, 20, 30, 30]);
    // asymmetric 0, 0.5, 1, 1.5, 2, 2.5: ties go down / up
    assert.deepEqual((await r({ coordinate_transformation_mode: 'asymmetric' })).data, [10, 10, 20, 20, 30, 30]);
    assert.deepEqual((await r({ coordinate_transformation_mode: 'asymmetric', nearest_mode: 'round_prefer_ceil' })).data,
      [10, 20, 20, 30, 30, 30]);
    assert.deepEqual((await r({ mode: 'linear' })).data, [10, 12.5, 17.5, 22.5, 27.5, 30]);
    // weights 0.4, 0.8, ... are float32 values: within a few ulp of the exact answers
    const ac = (await r({ mode: 'linear', coordinate_transformation_mode: 'align_corners' })).data;
    [10, 14, 18, 22, 26, 30].forEach((v, i) => assert.ok(Math.abs(ac[i] - v) < 1e-5, `${i}: ${ac[i]}`));
  });
}

test('a conv past max_macs_per_node is LIMIT before any work; the cost model counts taps', () => {
  const big = {
    version: 6, nodes: [
      { id: 0, op: 'full', shape: [1, 1024, 128, 128], value: 1 },
      { id: 1, op: 'full', shape: [1024, 1024, 3, 3], value: 1 },
      { id: 2, op: 'conv2d', a: 0, w: 1, bias: [], padding: [1, 1, 1, 1] }],
    outputs: [{ name: 'y', id: 2 }],
  };
  assert.throws(() => validateGraph(big), (e) => e.code === 'LIMIT' && /node 2 \(conv2d\).*max_macs_per_node/.test(e.message));
  const small = structuredClone(big);
  small.nodes[0].shape = [1, 256, 64, 64];
  small.nodes[1].shape = [256, 256, 3, 3];
  // 2 x 2^20 results x 2304 taps x 1.5 ns on cpu: about 7 s
  assert.ok(graphCostS(validateGraph(small), 'cpu') > 5);
});
