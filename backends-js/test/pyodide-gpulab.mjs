// gpulab's Python sources into a Pyodide filesystem, as the page's wheel holds them
// (pylib/gpulab/playground/wheel.py: no tests, caches, playground server, build tooling or
// conformance suite; a linked folder, kernels/wgsl, is not followed; a linked file is read).
import fs from 'node:fs';
import path from 'node:path';

const SKIP_DIRS = ['__pycache__', 'tests', 'playground', 'codegen', 'conformance'];

/** Copy `dir` (pylib/gpulab) into Pyodide's filesystem as /pkgs/gpulab. */
export function installGpulab(py, dir, rel = 'gpulab') {
  py.FS.mkdirTree(`/pkgs/${rel}`);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.includes(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) installGpulab(py, full, `${rel}/${entry.name}`);
    else if (fs.statSync(full).isFile()) py.FS.writeFile(`/pkgs/${rel}/${entry.name}`, fs.readFileSync(full));
  }
}
