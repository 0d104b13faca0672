// createRuntime: backend choice with recorded attempts, strictness, software refusal,
// validation before any backend work, execute results, dispose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime, BACKEND_ORDER } from '../src/runtime.mjs';
import { BACKENDS } from '../src/backends/index.mjs';
import * as cpu from '../src/backends/cpu.mjs';
import { existsSync } from 'node:fs';

const SEED = {
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

const failing = (message) => () => Promise.reject(new Error(message));

/** A backend module whose createBackend gives a recording wrapper around the CPU backend. */
function recordingModule(calls, info = {}) {
  return async () => ({
    async createBackend(opts) {
      const inner = await cpu.createBackend(opts);
      return {
        name: 'rec',
        info: { vendor: 'test', architecture: 'rec', description: 'recording', software: false, ...info },
        async prepare(checked, options) {
          calls.push('prepare');
          return inner.prepare(checked, options);
        },
        dispose() { calls.push('dispose'); },
      };
    },
  });
}

test('auto under node: webgpu and webgl2 are refused with reasons, the first backend that opens is used', async () => {
  const rt = await createRuntime();
  assert.deepEqual(rt.attempts.map((a) => a.backend), BACKEND_ORDER.slice(0, rt.attempts.length));
  const chosen = rt.attempts[rt.attempts.length - 1];
  assert.equal(chosen.ok, true);
  assert.equal(chosen.backend, rt.backend);
  for (const a of rt.attempts.slice(0, -1)) {
    assert.equal(a.ok, false);
    assert.ok(a.reason.length > 10, `a reason for ${a.backend}: ${a.reason}`);
    // the attempt names its backend; its reason must not repeat it ("webgl2: webgl2: ...")
    assert.ok(!a.reason.startsWith(`${a.backend}:`), `reason repeats the backend: ${a.reason}`);
  }
  assert.equal(rt.attempts[0].backend, 'webgpu');
  assert.equal(rt.attempts[0].ok, false, 'node has no WebGPU');
  assert.equal(rt.attempts[1].ok, false, 'node has no WebGL2');
  assert.ok(['wasm', 'cpu'].includes(rt.backend));
  // (Results on the chosen backend are that backend's tests; wasm may be the one chosen.)
  rt.dispose();
});

test('auto lands on cpu when webgpu, webgl2 and wasm cannot be loaded', async () => {
  const registry = { webgpu: failing('no webgpu here'), webgl2: failing('no webgl2 here'),
    wasm: failing('no wasm here'), cpu: BACKENDS.cpu };
  const rt = await createRuntime({ hooks: { registry } });
  assert.equal(rt.backend, 'cpu');
  assert.deepEqual(rt.attempts.map((a) => [a.backend, a.ok]),
    [['webgpu', false], ['webgl2', false], ['wasm', false], ['cpu', true]]);
  assert.match(rt.attempts[0].reason, /no webgpu here/);
  assert.match(rt.attempts[2].reason, /wasm backend module could not be loaded: Error: no wasm here/);
  assert.deepEqual(rt.info, { vendor: 'gpu-lab', architecture: 'js',
    description: 'JavaScript reference (CPU)', software: false });
  const r = await rt.execute(SEED);
  assert.deepEqual([...r.outputs.values.data], [0, 60, 120]);
  assert.deepEqual(r.stats.attempts, rt.attempts, 'results carry every attempt');
  rt.dispose();
});

test('an explicit backend that is unavailable throws UNAVAILABLE with the reason, never downgraded', async () => {
  await rejects(createRuntime({ backend: 'webgpu' }), 'UNAVAILABLE', /backend "webgpu" is not available \(webgpu: .+\)/);
  await rejects(createRuntime({ backend: 'webgl2', hooks: { registry: { webgl2: failing('gone') } } }),
    'UNAVAILABLE', /gone/);
  await rejects(createRuntime({ backend: 'nonsense' }), 'UNAVAILABLE', /unknown backend "nonsense"/);
  const rt = await createRuntime({ backend: 'cpu' });
  assert.equal(rt.backend, 'cpu');
  assert.deepEqual(rt.attempts, [{ backend: 'cpu', ok: true, software: false }]);
  rt.dispose();
});

test('strict: any fallback is an error listing the attempts', async () => {
  const registry = { webgpu: failing('no adapter'), webgl2: failing('no context'), wasm: BACKENDS.cpu, cpu: BACKENDS.cpu };
  await rejects(createRuntime({ strict: true, hooks: { registry } }), 'UNAVAILABLE', /webgpu: .*no adapter/);
  const rt = await createRuntime({ strict: true, hooks: { registry: { ...registry, webgpu: BACKENDS.cpu } } });
  assert.equal(rt.attempts.length, 1);
  rt.dispose();
});

test('software adapters are refused unless allowed, and then results say so', async () => {
  const calls = [];
  const registry = { webgpu: recordingModule(calls, { software: true, description: 'SwiftShader' }), cpu: BACKENDS.cpu };
  await rejects(createRuntime({ backend: 'webgpu', hooks: { registry } }), 'UNAVAILABLE', /software adapter SwiftShader/);
  // the refusal says how to allow it: the option, or the caller's own hint (the page's checkbox)
  await rejects(createRuntime({ backend: 'webgpu', hooks: { registry } }), 'UNAVAILABLE', /pass allowSoftware: true to createRuntime/);
  await rejects(createRuntime({ backend: 'webgpu', softwareHint: 'tick the box', hooks: { registry } }),
    'UNAVAILABLE', /SwiftShader \(tick the box\)/);
  const rt = await createRuntime({ backend: 'webgpu', allowSoftware: true, hooks: { registry } });
  assert.equal(rt.attempts[0].software, true);
  const r = await rt.execute(SEED);
  assert.equal(r.stats.software, true);
  assert.equal(r.stats.adapter.description, 'SwiftShader');
  rt.dispose();
});

test('execute validates before any backend work', async () => {
  const calls = [];
  const rt = await createRuntime({ backend: 'cpu', hooks: { registry: { cpu: recordingModule(calls) } } });
  const bad = structuredClone(SEED);
  bad.nodes[2].b = 42;
  await rejects(rt.execute(bad), 'VALIDATION', /node 2 \(mul\): dangling operand b = 42/);
  await rejects(rt.execute({ ...SEED, version: 9 }), 'UNSUPPORTED_VERSION');
  const unfed = { version: 1, nodes: [{ id: 0, op: 'input', shape: [2] }, { id: 1, op: 'relu', a: 0 }],
    outputs: [{ name: 'y', id: 1 }] };
  await rejects(rt.execute(unfed), 'VALIDATION', /^node 0 \(input\): has no data and is not fed/);
  await rejects(rt.prepare(bad), 'VALIDATION');
  assert.deepEqual(calls, [], 'the backend was never asked to prepare');
  await rt.execute(SEED);
  assert.deepEqual(calls, ['prepare']);
  rt.dispose();
  assert.deepEqual(calls, ['prepare', 'dispose']);
});

test('execute returns outputs by name with shapes, and stats', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const g = { version: 2, nodes: [{ id: 0, op: 'input', shape: [2, 2], data: [1, -1, 'nan', 4] },
    { id: 1, op: 'sqrt', a: 0 }, { id: 2, op: 'sum', a: 0, axis: 0 }],
  outputs: [{ name: 'r', id: 1 }, { name: 's', id: 2 }, { name: 'r2', id: 1 }] };
  const r = await rt.execute(g);
  assert.equal(r.backend, 'cpu');
  assert.deepEqual(Object.keys(r.outputs), ['r', 's', 'r2']);
  assert.deepEqual(r.outputs.r.shape, [2, 2]);
  assert.equal(r.outputs.r.dtype, 'float32');
  assert.ok(r.outputs.r.data instanceof Float32Array);
  // execute returns non-finite values as they are (no poisoning outside sessions)
  assert.deepEqual([...r.outputs.r.data], [1, NaN, NaN, 2]);
  assert.deepEqual([...r.outputs.s.data], [NaN, 3]);
  assert.notEqual(r.outputs.r.data, r.outputs.r2.data, 'two names of one node get their own arrays');
  assert.deepEqual([...r.outputs.r2.data], [...r.outputs.r.data]);
  assert.equal(r.stats.version, 2);
  assert.equal(r.stats.software, false);
  assert.equal(typeof r.stats.validateMs, 'number');
  assert.equal(typeof r.stats.runMs, 'number');
  assert.equal(r.stats.adapter.architecture, 'js');
  rt.dispose();
});

test('a backend failure in execute is BACKEND, and the runtime keeps working', async () => {
  const hooks = { failNextRun: true };
  const rt = await createRuntime({ backend: 'cpu', hooks });
  await rejects(rt.execute(SEED), 'BACKEND', /failNextRun/);
  const r = await rt.execute(SEED);
  assert.deepEqual([...r.outputs.values.data], [0, 60, 120]);
  const registry = { cpu: async () => ({ createBackend: async () => ({ name: 'boom', info: {},
    prepare: async () => ({ run: async () => { throw new TypeError('device lost'); }, dispose() {} }),
    dispose() {} }) }) };
  const rt2 = await createRuntime({ backend: 'cpu', hooks: { registry } });
  await rejects(rt2.execute(SEED), 'BACKEND', /TypeError: device lost/);
  const silent = { cpu: async () => ({ createBackend: async () => ({ name: 'silent', info: {},
    prepare: async () => ({ run: async () => new Map(), dispose() {} }), dispose() {} }) }) };
  const rt3 = await createRuntime({ backend: 'cpu', hooks: { registry: silent } });
  await rejects(rt3.execute(SEED), 'BACKEND', /returned no value for output "values"/);
  rt3.dispose();
  rt.dispose();
  rt2.dispose();
});

test('plan() validates first and delegates to planner.mjs (or says UNAVAILABLE)', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  await rejects(rt.plan({ ...SEED, outputs: [{ name: 'x', id: 99 }] }), 'VALIDATION', /dangling output/);
  const plannerPresent = existsSync(new URL('../src/planner.mjs', import.meta.url));
  if (plannerPresent) {
    const plan = await rt.plan(SEED);
    assert.ok(plan && typeof plan === 'object', 'planGraph returns a plan object');
  } else {
    await rejects(rt.plan(SEED), 'UNAVAILABLE', /planner/);
  }
  rt.dispose();
});

test('after dispose every call refuses with DISPOSED', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  rt.dispose();
  rt.dispose();
  await rejects(rt.execute(SEED), 'DISPOSED');
  await rejects(rt.prepare(SEED), 'DISPOSED');
  await rejects(rt.plan(SEED), 'DISPOSED');
});

test('an unavailable explicit backend names itself once in the error and the attempt', async () => {
  await assert.rejects(createRuntime({ backend: 'webgl2' }), (err) => {
    assert.equal(err.code, 'UNAVAILABLE');
    assert.match(err.message, /webgl2: /);
    assert.doesNotMatch(err.message, /webgl2: webgl2:/);
    return true;
  });
});
