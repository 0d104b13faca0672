// The protocol-v3 ops (abs, square, clamp, reduce_max/min, argmax/argmin) at int32 on every JS
// backend: a backend runs an int32 graph of them unless pylib/gpulab/conformance/lanes.json lists what it
// lacks, and then it refuses the graph with UNSUPPORTED before any device work; on cpu the
// int32 results are Int32Arrays with two's-complement wrapping. (The corpus, cases.json, checks
// every value on every lane against the float64/integer reference.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRuntime } from '../src/runtime.mjs';
import { validateGraph } from '../src/validate.mjs';
import * as cpu from '../src/backends/cpu.mjs';
import * as wasm from '../src/backends/wasm.mjs';
import * as webgl2 from '../src/backends/webgl2.mjs';
import * as webgpu from '../src/backends/webgpu.mjs';

const MODULES = { cpu, wasm, webgl2, webgpu };
const LANES = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json', import.meta.url),
  'utf8'));
const MIN = -2147483648;
const MAX = 2147483647;

const INT_GRAPH = {
  version: 3,
  nodes: [
    { id: 0, op: 'input', shape: [2, 3], dtype: 'int32', data: [MIN, -3, 46341, MAX, 0, -7] },
    { id: 1, op: 'abs', a: 0 },
    { id: 2, op: 'square', a: 0 },
    { id: 3, op: 'clamp', a: 0, min: -5.5, max: 1e10 },
    { id: 4, op: 'reduce_max', a: 1, axis: 1 },
    { id: 5, op: 'argmin', a: 0, axis: 0, keepdim: true },
    { id: 6, op: 'argmax', a: 2 },
  ],
  outputs: ['abs', 'square', 'clamp', 'max', 'argmin', 'argmax'].map((name, i) => ({ name, id: i + 1 })),
};

/** A backend module whose prepare (the first device work) is recorded and refused. */
function recording(mod, calls) {
  return async () => ({
    supports: mod.supports,
    async createBackend() {
      return {
        name: mod.name,
        info: { vendor: 'test', architecture: mod.name, description: 'recording', software: false },
        async prepare() {
          calls.push(mod.name);
          throw new Error('prepare must not be reached');
        },
        dispose() {},
      };
    },
  });
}

for (const [lane, mod] of Object.entries(MODULES)) {
  test(`${lane}: an int32 graph of the v3 ops is supported, or refused before device work as lanes.json says`, async () => {
    const support = await mod.supports(validateGraph(INT_GRAPH));
    const listed = LANES[lane] ?? {};
    const unlisted = support.missing.filter((m) => !Object.hasOwn(listed, m.op) &&
      !Object.hasOwn(listed, `${m.op}:${m.dtype}`));
    assert.deepEqual(unlisted, [], `${lane} lacks kernels that lanes.json does not list`);
    if (support.ok) return;
    const calls = [];
    const rt = await createRuntime({ backend: lane, hooks: { registry: { [lane]: recording(mod, calls) } } });
    const first = support.missing[0];
    await assert.rejects(rt.execute(INT_GRAPH), (err) => {
      assert.equal(err.code, 'UNSUPPORTED');
      assert.equal(err.node, first.id);
      assert.match(err.message, new RegExp(`^${lane} has no kernel for ${first.op}`));
      return true;
    });
    assert.deepEqual(calls, [], 'refused before prepare: no upload, no device work');
    rt.dispose();
  });
}

for (const [lane, mod] of Object.entries(MODULES)) {
  test(`${lane}: without its argmax kernel, the int32 graph is UNSUPPORTED before device work`, async () => {
    const calls = [];
    const rt = await createRuntime({ backend: lane, hooks: {
      registry: { [lane]: recording(mod, calls) }, withoutKernels: { [lane]: ['argmax'] } } });
    await assert.rejects(rt.execute(INT_GRAPH), (err) => {
      assert.equal(err.code, 'UNSUPPORTED');
      assert.equal(err.node, 6);
      assert.match(err.message, new RegExp(`^${lane} has no kernel for argmax \\(node 6\\)$`));
      return true;
    });
    assert.deepEqual(calls, [], 'refused before prepare: no upload, no device work');
    rt.dispose();
  });
}

test('cpu: int32 in, int32 out, wrapping as two\'s complement', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const { outputs: o } = await rt.execute(INT_GRAPH);
  for (const out of Object.values(o)) assert.ok(out.data instanceof Int32Array, 'an Int32Array');
  assert.deepEqual([...o.abs.data], [MIN, 3, 46341, MAX, 0, 7], 'abs(-2^31) = -2^31');
  assert.deepEqual([...o.square.data], [0, 9, -2147479015, 1, 0, 49], 'squares modulo 2^32');
  assert.deepEqual([...o.clamp.data], [-5, -3, 46341, MAX, 0, -5], 'ceil(-5.5); 1e10 saturates');
  assert.deepEqual([...o.max.data], [46341, MAX]);
  assert.deepEqual([o.argmin.shape, [...o.argmin.data]], [[1, 3], [0, 0, 1]]);
  assert.deepEqual([o.argmax.shape, [...o.argmax.data]], [[], [5]], 'axis null: the flattened index');
  rt.dispose();
});
