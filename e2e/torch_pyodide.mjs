// gpulab.torch's fixtures in Pyodide under node, on a JS runtime backend (cpu or wasm): the
// page's path (PageHost -> pyodide_bridge -> python-adapter -> runtime) without a browser.
// Eager steps through `await optimizer.step_async()` (node has no JSPI).
//   node e2e/torch_pyodide.mjs <backend> <fixture>...   -> one JSON line {name: trace}
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createPythonGPUAdapter } from '../backends-js/src/python-adapter.mjs';
import { createRuntime } from '../backends-js/src/runtime.mjs';
import { installGpulab } from '../backends-js/test/pyodide-gpulab.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pyodideDir = path.dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs'));
const { loadPyodide } = await import(path.join(pyodideDir, 'pyodide.mjs'));

const [backend, ...names] = process.argv.slice(2);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
// the package as the page's wheel holds it (its links to the op table read as files; a NODEFS
// mount would leave them dangling); the fixtures mounted from the tests folder
installGpulab(pyodide, path.join(root, 'pylib', 'gpulab'));
pyodide.FS.mkdirTree('/gpulab-tests');
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.join(root, 'pylib', 'tests') }, '/gpulab-tests');
const runtime = await createRuntime({ backend });
createPythonGPUAdapter(pyodide, runtime, { allowExecute: true });
pyodide.globals.set('names', pyodide.toPy(names));
const out = await pyodide.runPythonAsync(`
import json, sys
sys.path[:0] = ['/pkgs', '/gpulab-tests']
assert 'numpy' not in sys.modules
import gpulab.torch as torch
from torch_fixtures import fixtures as fx
traces = {n: await fx.run_async(fx.FIXTURES[n], torch) for n in names}
json.dumps({"backend": "${backend}", "numpy": 'numpy' in sys.modules, "traces": traces})
`);
console.log(out);
runtime.dispose();
