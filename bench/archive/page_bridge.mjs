// What the Pyodide bridge costs per `await g.run_async(...)` of the 784-256-10 MLP Adam step:
// Pyodide in node, gpulab from a pylib tree, the JS cpu runtime, 20 runs after one warm-up.
//
//   node bench/archive/page_bridge.mjs [--pylib pylib] [--runs 20] [--backend cpu]
//
// Prints the median / min of the whole call as Python sees it and of the runtime's own
// execute (timed by a wrapper), and their difference: the bridge (to_js of the graph, the
// answer's conversion back). Weights come from Python's `random` (the page has no numpy).
import { installGpulab } from '../../backends-js/test/pyodide-gpulab.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const pylib = path.resolve(arg('pylib', path.join(ROOT, 'pylib')));
const runs = Number(arg('runs', '20'));
const backend = arg('backend', 'cpu');

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const { loadPyodide } = await import('pyodide');
const { createRuntime } = await import(path.join(ROOT, 'backends-js/src/runtime.mjs'));
const { createPythonGPUAdapter } = await import(path.join(ROOT, 'backends-js/src/python-adapter.mjs'));
const py = await loadPyodide({ indexURL: path.join(ROOT, 'node_modules/pyodide/') });
installGpulab(py, path.join(pylib, 'gpulab'));
const runtime = await createRuntime({ backend });
const inner = [];
const timed = {
  backend: runtime.backend,
  async execute(graph) {
    const t0 = performance.now();
    try { return await runtime.execute(graph); } finally { inner.push(performance.now() - t0); }
  },
};
createPythonGPUAdapter(py, timed, { allowExecute: true });
globalThis.benchRuns = runs;
const total = (await py.runPythonAsync(`
import sys, random, time
sys.path.insert(0, "/pkgs")
from gpulab.models.mlp import step_graph

rng = random.Random(0)
def mat(r, c, s):
    return [[rng.gauss(0, 1) * s for _ in range(c)] for _ in range(r)]
y = [[1.0 if j == rng.randrange(10) else 0.0 for j in range(10)] for _ in range(64)]
values = {"w1": mat(784, 256, 1 / 28), "b1": [0.0] * 256, "w2": mat(256, 10, 1 / 16),
          "b2": [0.0] * 10, "x": [[rng.random() for _ in range(784)] for _ in range(64)], "y": y}
step = step_graph(values)
outputs = step.outputs()
await step.graph.run_async(**outputs)
samples = []
import js
for _ in range(int(js.benchRuns)):
    t0 = time.perf_counter()
    r = await step.graph.run_async(**outputs)
    samples.append((time.perf_counter() - t0) * 1e3)
samples
`)).toJs();
const own = inner.slice(1);
const bridge = total.map((t, i) => t - own[i]);
const fmt = (xs) => `${median(xs).toFixed(2)} / ${Math.min(...xs).toFixed(2)}`;
console.log(`pylib ${pylib}, backend ${runtime.backend}, ${runs} runs (median / min ms)`);
console.log(`run_async ${fmt(total)}; runtime.execute ${fmt(own)}; bridge ${fmt(bridge)}`);
