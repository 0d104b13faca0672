// The shared kernel registry (src/kernels.mjs) and the capability contract built on it: every
// JS backend's kernels match pylib/gpulab/conformance/lanes.json, a graph a backend has no kernel for
// is refused with UNSUPPORTED before any device work, auto passes over such a backend per
// graph and says why, and an explicit backend is never downgraded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  registerKernel, getKernel, registeredOps, supportsGraph, unsupportedError, kernelDtype,
  opKernelDtypes,
} from '../src/kernels.mjs';
import { opNames } from '../src/optable.mjs';
import { validateGraph } from '../src/validate.mjs';
import { createRuntime, BACKEND_ORDER } from '../src/runtime.mjs';
import { BACKENDS } from '../src/backends/index.mjs';
import * as cpu from '../src/backends/cpu.mjs';
import * as wasm from '../src/backends/wasm.mjs';
import * as webgl2 from '../src/backends/webgl2.mjs';
import * as webgpu from '../src/backends/webgpu.mjs';

const MODULES = { cpu, wasm, webgl2, webgpu };
const LANES = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json', import.meta.url),
  'utf8'));

const RELU = {
  version: 1,
  nodes: [
    { id: 0, op: 'input', shape: [3], data: [-2, 3, 4] },
    { id: 1, op: 'input', shape: [3], data: [10, 20, 30] },
    { id: 2, op: 'mul', a: 0, b: 1 },
    { id: 3, op: 'relu', a: 2 },
  ],
  outputs: [{ name: 'values', id: 3 }],
};

/** Rejects with a GpuLabError of `code` whose message matches `pattern`. */
async function rejects(promise, code, pattern = /./) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.name, 'GpuLabError');
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

test('registerKernel throws on a second kernel for one (op, backend); lookups are per backend', () => {
  const entry = registerKernel({ op: 'relu', backend: 'test-a', run: () => 1 });
  assert.deepEqual(entry.dtypes, ['float32'], 'float32 unless the kernel says more');
  assert.throws(() => registerKernel({ op: 'relu', backend: 'test-a', run: () => 2 }),
    /relu on test-a is already registered/);
  assert.equal(getKernel('relu', 'test-a').run(), 1, 'the first registration stays');
  assert.equal(getKernel('relu', 'test-b'), undefined);
  registerKernel({ op: 'relu', backend: 'test-b', dtypes: ['float32', 'int32'] });
  assert.deepEqual(registeredOps('test-a'), ['relu']);
  assert.throws(() => registerKernel({ op: 'relu' }), /needs \{op, backend\}/);
});

test('supportsGraph names every node without a kernel, and a kernel lacking the dtype', () => {
  const checked = validateGraph(RELU);
  registerKernel({ op: 'input', backend: 'test-c' });
  registerKernel({ op: 'mul', backend: 'test-c', dtypes: ['int32'] });
  const support = supportsGraph('test-c', checked);
  assert.equal(support.ok, false);
  assert.deepEqual(support.missing, [
    { id: 2, op: 'mul', dtype: 'float32', reason: 'no mul kernel at float32' },
    { id: 3, op: 'relu', dtype: 'float32', reason: 'no relu kernel' },
  ]);
  const err = unsupportedError('test-c', support.missing);
  assert.equal(err.code, 'UNSUPPORTED');
  assert.equal(err.node, 2);
  assert.match(err.message, /^test-c has no kernel for mul at float32 \(node 2\); 1 more node/);
  assert.deepEqual(supportsGraph('cpu', checked), { ok: true, missing: [] });
  assert.deepEqual(supportsGraph('cpu', checked, { without: ['relu'] }).missing,
    [{ id: 3, op: 'relu', dtype: 'float32', reason: 'no relu kernel' }]);
  assert.deepEqual(supportsGraph('cpu', checked, { without: ['mul:float32', 'relu:int32'] }).missing,
    [{ id: 2, op: 'mul', dtype: 'float32', reason: 'no mul kernel at float32' }]);
});

test('an int32 input is a node at int32: a backend whose input kernel is float32-only lacks it', () => {
  const checked = validateGraph({ version: 3, nodes: [
    { id: 0, op: 'input', shape: [2], dtype: 'int32', data: [1, -2] },
    { id: 1, op: 'input', shape: [2], data: [1, 2] },
    { id: 2, op: 'relu', a: 1 },
  ], outputs: [{ name: 'i', id: 0 }, { name: 'r', id: 2 }] });
  registerKernel({ op: 'input', backend: 'test-d' });
  registerKernel({ op: 'relu', backend: 'test-d' });
  const { missing } = supportsGraph('test-d', checked);
  assert.deepEqual(missing, [{ id: 0, op: 'input', dtype: 'int32', reason: 'no input kernel at int32' }]);
  assert.match(unsupportedError('test-d', missing).message, /^test-d has no kernel for input at int32 \(node 0\)$/);
  registerKernel({ op: 'input', backend: 'test-e', dtypes: ['float32', 'int32'] });
  registerKernel({ op: 'relu', backend: 'test-e' });
  assert.deepEqual(supportsGraph('test-e', checked), { ok: true, missing: [] });
});

test('a kernel handles rank <= 4 unless it says more: a higher rank is UNSUPPORTED by name', () => {
  // five axes that no permute keeps adjacent: no view of rank <= 4 (lowering-rank.mjs)
  const nodes = [{ id: 0, op: 'input', shape: [2, 3, 2, 3, 2], data: new Array(72).fill(1) },
    { id: 1, op: 'permute', a: 0, dims: [4, 2, 0, 3, 1] }];
  const checked = validateGraph({ version: 8, nodes, outputs: [{ name: 'r', id: 1 }] });
  registerKernel({ op: 'input', backend: 'test-f' });
  registerKernel({ op: 'reshape', backend: 'test-f', maxRank: 8 });
  registerKernel({ op: 'permute', backend: 'test-f' });
  const { missing } = supportsGraph('test-f', checked);
  assert.deepEqual(missing, [{ id: 1, op: 'permute', dtype: 'float32', reason: 'no permute kernel at rank 5',
    at: 'rank 5' }]);
  assert.match(unsupportedError('test-f', missing).message, /^test-f has no kernel for permute at rank 5 \(node 1\)$/);
  for (const op of ['input', 'reshape', 'permute']) registerKernel({ op, backend: 'test-g', maxRank: 8 });
  assert.deepEqual(supportsGraph('test-g', checked), { ok: true, missing: [] });
  assert.deepEqual(supportsGraph('cpu', checked), { ok: true, missing: [] }, 'the JS CPU walks any rank');
});

test('opKernelDtypes: the dtypes of the variable the kernel goes by', () => {
  assert.deepEqual(opKernelDtypes('relu'), ['float32']);
  assert.deepEqual(opKernelDtypes('input').sort(),
    ['bool', 'float32', 'int32', 'q4_0', 'q4_k', 'q6_k', 'q8_0', 'uint32']);
  assert.deepEqual(opKernelDtypes('full'), ['float32']);
  assert.deepEqual(opKernelDtypes('no-such-op'), []);
});

test('the kernel dtype of a T -> T op or a source is its result dtype', () => {
  const node = (id, op, operands, dtype) => ({ id, op, operands, attrs: {}, shape: [2], dtype });
  const nodes = [node(0, 'input', [], 'int32'), node(1, 'add', [0, 0], 'int32')];
  const checked = { byId: new Map(nodes.map((n) => [n.id, n])) };
  assert.equal(kernelDtype(nodes[0], checked), 'int32');
  assert.equal(kernelDtype(nodes[1], checked), 'int32');
});

for (const [lane, mod] of Object.entries(MODULES)) {
  test(`${lane}: every op (and dtype) of the table has a kernel unless lanes.json lists it (and only then)`, async () => {
    assert.ok(Object.hasOwn(LANES, lane), `lanes.json has a "${lane}" lane`);
    const listed = LANES[lane];
    await mod.supports(validateGraph(RELU));  // webgpu registers the planner's rules on first use
    const have = new Set(registeredOps(lane));
    const lacking = opNames().filter((op) => !have.has(op) && !Object.hasOwn(listed, op));
    assert.deepEqual(lacking, [], `${lane} has no kernel for these ops, and lanes.json does not list them`);
    const lackingDtypes = [];
    for (const op of have) {
      const kernel = getKernel(op, lane);
      for (const dtype of opKernelDtypes(op)) {
        const entry = `${op}:${dtype}`;
        if (!kernel.dtypes.includes(dtype) && !Object.hasOwn(listed, entry)) lackingDtypes.push(entry);
      }
    }
    assert.deepEqual(lackingDtypes, [], `${lane}'s kernels lack these dtypes the op table allows, ` +
      'and lanes.json does not list them');
    for (const entry of Object.keys(listed)) {
      const [op, dtype] = entry.split(':');
      assert.ok(opNames().includes(op), `lanes.json ${lane}: "${entry}" is not an op of the table`);
      const kernel = getKernel(op, lane);
      const supported = dtype ? Boolean(kernel?.dtypes.includes(dtype)) : Boolean(kernel);
      assert.ok(!supported, `lanes.json ${lane}: "${entry}" has a kernel now: remove it from lanes.json`);
    }
  });
}

/**
 * A backend module whose backend is the real module's for supports() but records prepare (the
 * first device work) instead of doing it, so a test can see that nothing reached the device.
 */
function recording(mod, calls) {
  return async () => ({
    supports: mod.supports,
    async createBackend() {
      return {
        name: mod.name,
        info: { vendor: 'test', architecture: mod.name, description: 'recording', software: false },
        async prepare() {
          calls.push(`prepare ${mod.name}`);
          throw new Error('prepare must not be reached');
        },
        dispose() {},
      };
    },
  });
}

for (const [lane, mod] of Object.entries(MODULES)) {
  test(`${lane}: a graph with an op it has no kernel for is UNSUPPORTED before prepare`, async () => {
    const calls = [];
    const rt = await createRuntime({ backend: lane,
      hooks: { registry: { [lane]: recording(mod, calls) }, withoutKernels: { [lane]: ['relu'] } } });
    await rejects(rt.execute(RELU), 'UNSUPPORTED', new RegExp(`^${lane} has no kernel for relu \\(node 3\\)$`));
    await rejects(rt.prepare(RELU), 'UNSUPPORTED', /has no kernel for relu \(node 3\)/);
    assert.deepEqual(calls, [], 'no prepare (no upload, no device work) happened');
    rt.dispose();
  });
}

test('cpu and wasm for real: UNSUPPORTED allocates nothing, and the same runtime runs the next graph', async () => {
  for (const backend of ['cpu', 'wasm']) {
    const hooks = { withoutKernels: ['relu'] };
    const rt = await createRuntime({ backend, hooks });
    const before = backend === 'wasm' ? JSON.stringify(hooks.wasmStats()) : null;
    await assert.rejects(rt.execute(RELU), (err) => {
      assert.equal(err.code, 'UNSUPPORTED');
      assert.equal(err.node, 3);
      return true;
    });
    if (before) assert.equal(JSON.stringify(hooks.wasmStats()), before, 'the wasm arena is untouched');
    const noRelu = { ...RELU, nodes: RELU.nodes.slice(0, 3), outputs: [{ name: 'values', id: 2 }] };
    const res = await rt.execute(noRelu);
    assert.deepEqual([...res.outputs.values.data], [-20, 60, 120]);
    rt.dispose();
  }
});

test('auto per graph: passes over a backend without the kernel, says why, and runs on the next', async () => {
  const rt = await createRuntime({ hooks: { withoutKernels: { wasm: ['relu'] } } });
  assert.equal(rt.backend, 'wasm', 'under node, wasm is the first backend that opens');
  const res = await rt.execute(RELU);
  assert.equal(res.backend, 'cpu', 'the result names the backend that ran');
  assert.deepEqual([...res.outputs.values.data], [0, 60, 120]);
  const byName = Object.fromEntries(res.stats.attempts.map((a) => [a.backend, a]));
  assert.deepEqual(res.stats.attempts.map((a) => a.backend), BACKEND_ORDER);
  assert.equal(byName.wasm.ok, false);
  assert.equal(byName.wasm.reason, 'UNSUPPORTED: wasm has no kernel for relu (node 3)');
  assert.equal(byName.cpu.ok, true);
  assert.match(res.stats.fallback, /wasm has no kernel for relu .*ran on cpu/);
  // A graph wasm supports still runs there, with no fallback recorded.
  const plain = { ...RELU, nodes: RELU.nodes.slice(0, 3), outputs: [{ name: 'v', id: 2 }] };
  const again = await rt.execute(plain);
  assert.equal(again.backend, 'wasm');
  assert.equal(again.stats.fallback, undefined);
  // Sessions choose the same way.
  const session = await rt.prepare(RELU);
  assert.equal(session.backend, 'cpu');
  const ran = await session.run();
  assert.equal(ran.backend, 'cpu');
  assert.equal(ran.stats.attempts.find((a) => a.backend === 'wasm').code, 'UNSUPPORTED');
  rt.dispose();
});

test('auto: no backend with the kernel is UNSUPPORTED listing every backend passed over', async () => {
  const rt = await createRuntime({ hooks: { withoutKernels: ['relu'] } });
  await rejects(rt.execute(RELU), 'UNSUPPORTED',
    /^cpu has no kernel for relu \(node 3\) \(passed over: webgpu: .*; wasm: UNSUPPORTED: wasm has no kernel for relu/);
  rt.dispose();
});

test('auto: a refusal stays UNSUPPORTED when the backends after it are unavailable', async () => {
  const registry = { wasm: BACKENDS.wasm, cpu: () => Promise.reject(new Error('no cpu today')) };
  const rt = await createRuntime({ hooks: { registry, withoutKernels: ['relu'] } });
  assert.equal(rt.backend, 'wasm');
  await rejects(rt.execute(RELU), 'UNSUPPORTED',
    /^wasm has no kernel for relu \(node 3\) \(passed over: webgpu: .*; cpu: cpu backend module could not be loaded: Error: no cpu today\)$/);
  rt.dispose();
});

test('strict auto and an explicit backend are never downgraded to a backend with the kernel', async () => {
  const calls = [];
  const registry = { webgpu: recording(webgpu, calls), cpu: recording(cpu, calls) };
  const strict = await createRuntime({ strict: true,
    hooks: { registry, withoutKernels: { webgpu: ['relu'] } } });
  assert.equal(strict.backend, 'webgpu');
  await rejects(strict.execute(RELU), 'UNSUPPORTED', /^webgpu has no kernel for relu \(node 3\)$/);
  const explicit = await createRuntime({ backend: 'wasm', hooks: { withoutKernels: ['relu'] } });
  await rejects(explicit.execute(RELU), 'UNSUPPORTED', /^wasm has no kernel for relu/);
  assert.deepEqual(calls, []);
  strict.dispose();
  explicit.dispose();
});
