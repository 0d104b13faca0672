// The Python adapter's guarantees, with a fake Pyodide and a fake runtime whose results we
// release by hand (so "late" and "pending" are under the test's control).
import { installGpulab } from './pyodide-gpulab.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createPythonGPUAdapter, PYTHON_MODULE_NAME } from '../src/python-adapter.mjs';
import {
  PHASE, SLOT, clearInterrupt, createWaitGate, interruptInFlight, requestStop,
} from '../../web/stop-control.mjs';

const GRAPH = {
  version: 1,
  nodes: [{ id: 0, op: 'input', shape: [1], data: [2] }, { id: 1, op: 'relu', a: 0 }],
  outputs: [{ name: 'y', id: 1 }],
};

/** A runtime whose execute() waits until the test calls release(). */
function gatedRuntime() {
  const gates = [];
  const runtime = {
    backend: 'cpu',
    calls: 0,
    execute(graph) {
      runtime.calls += 1;
      return new Promise((resolve, reject) => gates.push({ resolve, reject, graph }));
    },
  };
  const release = (i = 0, value = 7) => gates[i].resolve({
    backend: 'cpu', outputs: { y: { shape: [1], dtype: 'float32', data: new Float32Array([value]) } },
    stats: {},
  });
  const fail = (i, err) => gates[i].reject(err);
  return { runtime, gates, release, fail };
}

/** A fake Pyodide recording registerJsModule; proxies are functions with destroy(). */
function fakePyodide() {
  const modules = new Map();
  return {
    modules,
    registerJsModule: (name, mod) => modules.set(name, mod),
    unregisterJsModule: (name) => modules.delete(name),
  };
}

function proxyFn(fn) {
  const f = (...args) => fn(...args);
  f.destroyed = false;
  f.destroy = () => { f.destroyed = true; };
  return f;
}

const tick = () => new Promise((r) => setTimeout(r, 0));

test('without allowExecute every request is refused with PERMISSION', async () => {
  const { runtime } = gatedRuntime();
  const adapter = createPythonGPUAdapter(null, runtime);
  await assert.rejects(adapter.execute(GRAPH), (e) => e.code === 'PERMISSION' &&
    /allowExecute/.test(e.message));
  assert.throws(() => adapter.submit(GRAPH, () => {}, () => {}), (e) => e.code === 'PERMISSION');
  assert.equal(runtime.calls, 0, 'nothing reached the runtime');
});

test('without allowExecute a graph that is not JSON is refused with PERMISSION, not VALIDATION', async () => {
  const { runtime } = gatedRuntime();
  const adapter = createPythonGPUAdapter(null, runtime);
  await assert.rejects(adapter.execute('{not json'), (e) => e.code === 'PERMISSION');
  await assert.rejects(adapter.prepare('{not json', '{'), (e) => e.code === 'PERMISSION');
  const granted = createPythonGPUAdapter(null, runtime, { allowExecute: true });
  await assert.rejects(granted.execute('{not json'), (e) => e.code === 'VALIDATION');
  assert.equal(runtime.calls, 0, 'nothing reached the runtime');
});

test('the Python module answers a refusal as an error envelope, releasing callbacks', async () => {
  const py = fakePyodide();
  const { runtime } = gatedRuntime();
  createPythonGPUAdapter(py, runtime, { allowExecute: false });
  const mod = py.modules.get(PYTHON_MODULE_NAME);
  const env = await mod.execute(GRAPH);
  assert.equal(env.ok, false);
  assert.equal(env.error.code, 'PERMISSION');
  const onResult = proxyFn(() => {});
  const onError = proxyFn(() => {});
  const sub = mod.submit(GRAPH, onResult, onError);
  assert.equal(sub.ok, false);
  assert.equal(sub.error.code, 'PERMISSION');
  assert.ok(onResult.destroyed && onError.destroyed, 'refused callbacks are released');
});

test('past maxPending requests are refused with PERMISSION, not queued', async () => {
  const { runtime, release } = gatedRuntime();
  const adapter = createPythonGPUAdapter(null, runtime, { allowExecute: true, maxPending: 2 });
  const first = adapter.execute(GRAPH);
  const second = adapter.execute(GRAPH);
  assert.equal(adapter.pending, 2);
  await assert.rejects(adapter.execute(GRAPH), (e) => e.code === 'PERMISSION' &&
    /too many pending/.test(e.message));
  await tick();
  assert.equal(runtime.calls, 2, 'the refused request never reached the runtime');
  release(0);
  const result = await first;
  assert.deepEqual(Array.from(result.outputs.y.data), [7]);
  assert.equal(adapter.pending, 1);
  const third = adapter.execute(GRAPH); // room again after a result came back
  assert.equal(adapter.pending, 2);
  await tick();
  release(1); release(2);
  await Promise.all([second, third]);
  assert.equal(adapter.pending, 0);
});

test('a late result after dispose is dropped: no callback, no settled promise', async () => {
  const { runtime, release } = gatedRuntime();
  const adapter = createPythonGPUAdapter(null, runtime, { allowExecute: true });
  let delivered = 0;
  const onResult = proxyFn(() => { delivered += 1; });
  const onError = proxyFn(() => { delivered += 1; });
  adapter.submit(GRAPH, onResult, onError);
  let settled = false;
  adapter.execute(GRAPH).then(() => { settled = true; }, () => { settled = true; });
  await tick();
  adapter.dispose();
  assert.ok(onResult.destroyed, 'held callbacks are released at dispose');
  release(0); release(1);
  await tick(); await tick();
  assert.equal(delivered, 0, 'callback never ran');
  assert.equal(settled, false, 'promise never settled');
  assert.equal(adapter.dropped, 2);
  await assert.rejects(adapter.execute(GRAPH), (e) => e.code === 'DISPOSED');
});

test('dispose unregisters the Python module', () => {
  const py = fakePyodide();
  const adapter = createPythonGPUAdapter(py, gatedRuntime().runtime, { allowExecute: true });
  assert.ok(py.modules.has(PYTHON_MODULE_NAME));
  adapter.dispose();
  assert.ok(!py.modules.has(PYTHON_MODULE_NAME));
});

test('submit delivers results and errors as envelopes and whenIdle waits for them', async () => {
  const py = fakePyodide();
  const { runtime, release, fail } = gatedRuntime();
  const adapter = createPythonGPUAdapter(py, runtime, { allowExecute: true });
  const mod = py.modules.get(PYTHON_MODULE_NAME);
  const got = [];
  const onResult = proxyFn((env) => got.push(env));
  const onError = proxyFn((env) => got.push(env));
  assert.equal(mod.submit(GRAPH, onResult, onError).ok, true);
  mod.submit(GRAPH, proxyFn((env) => got.push(env)), proxyFn((env) => got.push(env)));
  const idle = adapter.whenIdle();
  await tick();
  release(0, 60);
  fail(1, Object.assign(new Error('node 1 (relu): bad'), { code: 'VALIDATION', node: 1 }));
  await idle;
  assert.equal(got.length, 2);
  assert.equal(got[0].ok, true);
  assert.deepEqual(Array.from(got[0].value.outputs.y.data), [60]);
  assert.deepEqual(got[1], { ok: false, error: { code: 'VALIDATION', message: 'node 1 (relu): bad', node: 1 } });
  assert.ok(onResult.destroyed && onError.destroyed, 'callbacks released after delivery');
});

test('a PyProxy graph is converted with toJs before it reaches the runtime', async () => {
  const { runtime, gates, release } = gatedRuntime();
  const adapter = createPythonGPUAdapter(null, runtime, { allowExecute: true });
  let options = null;
  const proxy = { toJs: (opts) => { options = opts; return GRAPH; } };
  const done = adapter.execute(proxy);
  await tick();
  assert.equal(gates[0].graph, GRAPH);
  assert.equal(options.dict_converter, Object.fromEntries);
  release(0);
  await done;
});

test('Stop cancels a long session run between chunks and refuses new requests', async () => {
  let stop = false;
  const runs = [];
  const runtime = {
    execute: async () => ({}),
    prepare: async () => ({
      run: async (steps) => { runs.push(steps); if (runs.length === 2) stop = true; return { step: runs.length }; },
      download: async () => new Float32Array([1]),
      dispose: () => {},
    }),
  };
  const adapter = createPythonGPUAdapter(null, runtime, {
    allowExecute: true, shouldCancel: () => stop, chunkSteps: 4,
  });
  const session = await adapter.prepare(GRAPH, {});
  await assert.rejects(session.run(10), (e) => e.code === 'PERMISSION' && /Stop/.test(e.message));
  assert.deepEqual(runs, [4, 4], 'the third chunk never ran');
  await assert.rejects(adapter.execute(GRAPH), (e) => /Stop/.test(e.message));
  stop = false;
  const result = await session.run([{ 0: [1] }, { 0: [2] }]);
  assert.deepEqual(runs.at(-1), [{ 0: [1] }, { 0: [2] }]);
  assert.equal(result.step, 3);
});

test('a session run with fewer steps than a chunk is one runtime call', async () => {
  const runs = [];
  const runtime = {
    execute: async () => ({}),
    prepare: async () => ({ run: async (s) => { runs.push(s); return {}; }, dispose() {} }),
  };
  const adapter = createPythonGPUAdapter(null, runtime, { allowExecute: true });
  const session = await adapter.prepare(GRAPH);
  await session.run(8);
  assert.deepEqual(runs, [8]);
});

// ---------------------------------------------------------------------------------------------
// Stop while Python waits (web/stop-control.mjs, the page's side of the adapter's wait gate)

const newControl = () => new Int32Array(new SharedArrayBuffer(16));

test('Stop while Python runs its own code sends SIGINT; a wait then starts as "sigint"', () => {
  const control = newControl();
  const gate = createWaitGate(control);
  requestStop(control);
  assert.equal(control[SLOT.INTERRUPT], 2);
  assert.equal(control[SLOT.CANCEL], 1);
  assert.equal(gate.enter(), 'sigint', 'the bridge must let the SIGINT land in its own code');
  assert.equal(interruptInFlight(control), true);
  clearInterrupt(control);
  assert.equal(interruptInFlight(control), false);
});

test('Stop during a wait sends no SIGINT: leaving the wait says "stopped", and so do later waits', () => {
  const control = newControl();
  const gate = createWaitGate(control);
  assert.equal(gate.enter(), 'ok');
  assert.equal(gate.enter(), 'ok', 'nested wait (asyncio.gather)');
  requestStop(control);
  assert.equal(control[SLOT.INTERRUPT], 0, 'no SIGINT while the answer goes through glue');
  assert.equal(control[SLOT.CANCEL], 1);
  assert.equal(gate.leave(), 'ok', 'the inner wait');
  assert.equal(gate.leave(), 'stopped');
  assert.equal(gate.enter(), 'stopped');
  assert.equal(interruptInFlight(control), false);
});

test('a wait that starts or ends as Stop is pressed is seen by exactly one side (two threads)', {
  timeout: 60_000,
}, async () => {
  const { Worker } = await import('node:worker_threads');
  const control = newControl();
  const moduleUrl = new URL('../../web/stop-control.mjs', import.meta.url).href;
  // The worker thread plays Python: wait, run "own code", wait, ... until a wait answers
  // something else than 'ok'; it reports which answer ended it.
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.moduleUrl).then(({ createWaitGate }) => {
      parentPort.on('message', () => {
        const gate = createWaitGate(workerData.control);
        for (;;) {
          const entered = gate.enter();
          if (entered !== 'ok') { parentPort.postMessage(entered); return; }
          const left = gate.leave();
          if (left !== 'ok') { parentPort.postMessage('left:' + left); return; }
        }
      });
      parentPort.postMessage('ready');
    });`;
  const worker = new Worker(source, { eval: true, workerData: { control, moduleUrl } });
  const next = () => new Promise((resolve) => worker.once('message', resolve));
  assert.equal(await next(), 'ready');
  const seen = new Set();
  for (let trial = 0; trial < 60; trial += 1) {
    for (const slot of Object.values(SLOT)) Atomics.store(control, slot, 0);
    const answer = next();
    worker.postMessage('go');
    const spin = Date.now() + (trial % 4);
    while (Date.now() < spin) { /* let the other thread loop a little */ }
    requestStop(control);
    const how = await answer;
    seen.add(how);
    if (how === 'sigint') {
      assert.equal(control[SLOT.INTERRUPT], 2, 'SIGINT sent while Python ran its own code');
    } else {
      assert.equal(how, 'left:stopped');
      assert.equal(control[SLOT.INTERRUPT], 0, 'no SIGINT may be sent during a wait');
      assert.equal(control[SLOT.PHASE], PHASE.STOPPED);
    }
  }
  await worker.terminate();
  assert.ok(seen.size >= 1);
});

test('the Python module exposes the wait gate; beforeDeliver runs before each result', async () => {
  const py = fakePyodide();
  const { runtime, release } = gatedRuntime();
  const calls = [];
  const adapter = createPythonGPUAdapter(py, runtime, {
    allowExecute: true,
    waitGate: { enter: () => { calls.push('enter'); return 'ok'; }, leave: () => 'stopped' },
    beforeDeliver: () => calls.push('beforeDeliver'),
  });
  const mod = py.modules.get(PYTHON_MODULE_NAME);
  assert.equal(mod.enter_wait(), 'ok');
  const envelope = mod.execute(GRAPH);
  await tick();
  release(0);
  const answer = await envelope;
  calls.push('delivered');
  assert.equal(answer.ok, true, 'the result is still delivered');
  assert.equal(mod.leave_wait(), 'stopped');
  assert.deepEqual(calls, ['enter', 'beforeDeliver', 'delivered']);
  assert.equal(adapter.pending, 0);
});

// ---------------------------------------------------------------------------------------------
// The real thing in node: Pyodide + pylib's gpulab (pyodide_bridge) + this adapter + the CPU
// runtime. JSPI is not in node 20, so this covers the awaitable and callback paths; the
// synchronous g.run is covered in the browser (e2e/test_playground.py).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Wrap a runtime to record the JS types of graph data and session feeds it receives. */
function recordTransport(runtime) {
  const graphData = [];
  const feeds = [];
  const dataTypes = (graph) => graph.nodes.filter((n) => n.data !== undefined)
    .map((n) => n.data.constructor.name);
  const wrapped = {
    backend: runtime.backend,
    execute(graph) { graphData.push(dataTypes(graph)); return runtime.execute(graph); },
    async prepare(graph, options) {
      graphData.push(dataTypes(graph));
      const session = await runtime.prepare(graph, options);
      const run = session.run.bind(session);
      session.run = (steps) => {
        if (Array.isArray(steps)) {
          for (const step of steps) feeds.push(...Object.values(step).map((d) => d.constructor.name));
        }
        return run(steps);
      };
      return session;
    },
  };
  return { runtime: wrapped, graphData, feeds };
}

// the timeout only guards against a hang: loading Pyodide took over 120 s on a loaded 2-core machine
test('Python in Pyodide runs graphs through the adapter, without numpy', { timeout: 600_000 }, async () => {
  const { loadPyodide } = await import('pyodide');
  const { createRuntime } = await import('../src/runtime.mjs');
  const py = await loadPyodide({ indexURL: path.join(ROOT, 'node_modules/pyodide/') });
  installGpulab(py, path.join(ROOT, 'pylib/gpulab'));
  const lines = [];
  py.setStdout({ batched: (s) => lines.push(s) });
  py.setStderr({ batched: (s) => lines.push(`stderr: ${s}`) });
  const runtime = await createRuntime({ backend: 'cpu' });
  const transport = recordTransport(runtime);
  const adapter = createPythonGPUAdapter(py, transport.runtime, { allowExecute: true });
  await py.runPythonAsync(`
import sys
sys.path.insert(0, "/pkgs")
from gpulab import Graph, GpuLabError
from gpulab import pyodide_bridge as bridge

g = Graph()
a = g.tensor([-2, 3, 4]); b = g.tensor([10, 20, 30])
r = await g.run_async(values=(a * b).relu())
print("result", r["backend"], r["outputs"]["values"], type(r["outputs"]["values"]["data"][0]).__name__)

try:
    await bridge.execute_async({"version": 1, "nodes": [{"id": 0, "op": "input", "shape": [2], "data": [1, 2]},
                                {"id": 5, "op": "relu", "a": 9}], "outputs": [{"name": "y", "id": 5}]})
except GpuLabError as err:
    print("error", err.code, err.node, "dangling" in err.message)

x = g.tensor([[0, 1, 0], [0, 1, 0], [0, 1, 0]])
s = await bridge.prepare_async(g.to_dict(board=x.life()), carry={x.id: "board"}, outputs=["board"])
out = await s.run_steps_async(2)
now = await s.download_async(x)
print("session", s.steps_run, out["outputs"]["board"]["data"] == now["data"], now["shape"])
s.dispose()

# transport: a fed session; feeds as a buffer and as a list, outputs back as buffers
import array
from gpulab import host
f = g.input([3], name="f")
fed = await g.prepare_async(feeds=[f], y=f * g.tensor([1.0, 2.0, 3.0]))
res = await fed.run_steps_async([{f: array.array("f", [1, 2, 3])}, {"f": [4.0, 5.0, 6.0]}])
y = res["outputs"]["y"]
print("out buffer", type(y._flat).__name__, y._flat.format, dict.__contains__(y, "data"), y["data"])
fed.dispose()
gi = Graph()
ints = await gi.run_async(i=gi.tensor([1, -2, 3], dtype="int32"))
iv = ints["outputs"]["i"]
print("int32 out", iv["dtype"], type(iv._flat).__name__, iv._flat.format, iv["data"])
# a q4_k weight: d 1, the first sub-block's scale 1, every quant 1: 32 ones
gq = Graph()
block = bytes([0x00, 0x3C, 0, 0, 1] + [0] * 11 + [0x11] * 128)
wq = gq.quantized(block, "q4_k", (1, 256))
rq = await gq.run_async(y=gq.tensor([1.0] * 256, shape=[1, 256]) @ wq.T)
print("quant out", rq["outputs"]["y"]["data"])
print("host", type(host.HOST).__name__)
print("numpy loaded:", "numpy" in sys.modules)
`);
  await adapter.whenIdle();
  const out = lines.join('\n');
  // Tensor data crossed as typed arrays, both ways (no per-element lists).
  // (g.run_async and g.prepare_async; the graphs between are hand-written JSON-style dicts)
  assert.deepEqual(transport.graphData[0], ['Float32Array', 'Float32Array']);
  assert.deepEqual(transport.graphData.at(-3), ['Float32Array']);
  assert.deepEqual(transport.feeds, ['Float32Array', 'Float32Array']);
  assert.match(out, /out buffer memoryview f False \[4\.0, 10\.0, 18\.0\]/);
  assert.match(out, /host PageHost/);
  assert.deepEqual(transport.graphData.at(-2), ['Int32Array'], 'int32 data as an Int32Array');
  // q4_k block bytes cross as one Uint8Array (bytes, not a list), x as a Float32Array
  assert.deepEqual(transport.graphData.at(-1), ['Uint8Array', 'Float32Array']);
  assert.match(out, /quant out \[32\.0\]/);
  assert.match(out, /int32 out int32 memoryview i \[1, -2, 3\]/);
  assert.match(out, /result cpu \{'shape': \[3\], 'dtype': 'float32', 'data': \[0\.0, 60\.0, 120\.0\]\} float/);
  assert.match(out, /error VALIDATION 5 True/);
  assert.match(out, /session 2 True \[3, 3\]/);
  assert.match(out, /numpy loaded: False/);

  // A second adapter without allowExecute replaces the module: Python sees PERMISSION.
  adapter.dispose();
  createPythonGPUAdapter(py, runtime, { allowExecute: false });
  await py.runPythonAsync(`
try:
    await g.run_async(values=a + b)
except GpuLabError as err:
    print("refused", err.code, "allowExecute" in err.message)
`);
  assert.match(lines.join('\n'), /refused PERMISSION True/);

  // Stop through the wait gate, with Pyodide's real interrupt buffer: pressed just before a
  // result reaches Python (the moment that used to lose the interrupt in Pyodide's glue), and
  // pressed while Python runs its own code (SIGINT: the bridge lets it land in its own stack).
  const control = new Int32Array(new SharedArrayBuffer(16));
  py.setInterruptBuffer(control);
  let stopNext = false;
  createPythonGPUAdapter(py, runtime, {
    allowExecute: true,
    waitGate: createWaitGate(control),
    shouldCancel: () => control[SLOT.CANCEL] === 1,
    beforeDeliver: () => { if (stopNext) { stopNext = false; requestStop(control); } },
  });
  globalThis.gpulabTestPressStop = () => requestStop(control);
  const stopped = async (pressFirst) => {
    for (const slot of Object.values(SLOT)) Atomics.store(control, slot, 0);
    await py.runPythonAsync(`
import js
try:
    if ${pressFirst ? 'True' : 'False'}:
        js.gpulabTestPressStop()
    await g.run_async(values=a + b)
    print("stop: not stopped")
except KeyboardInterrupt as exc:
    print("stop:", repr(exc))
`);
  };
  stopNext = true;
  await stopped(false);
  assert.match(lines.join('\n'), /stop: KeyboardInterrupt\('stopped by the user \(Stop\)'\)/);
  assert.equal(control[SLOT.INTERRUPT], 0, 'no SIGINT was sent into the glue');
  lines.length = 0;
  await stopped(true);
  assert.match(lines.join('\n'), /stop: KeyboardInterrupt\(\)/, 'the real SIGINT, in the bridge');
  assert.equal(control[SLOT.INTERRUPT], 0, 'Pyodide took the SIGINT');
  py.setInterruptBuffer(undefined);
  delete globalThis.gpulabTestPressStop;
});
