// Preload for running the page's WebGPU backend unchanged under node with Dawn:
//   node --import ./pylib/gpulab/conformance/dawn_setup.mjs pylib/gpulab/conformance/node_executor.mjs webgpu < cases
//   node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/mlp.mjs --runs 50
// It gives node what a page has and the backend expects, without touching the runtime:
// - navigator.gpu and the GPU* globals from Dawn (npm `webgpu`, whose package ships
//   dawn.node); GPULAB_DAWN names the package's index.js when it is not resolvable as `webgpu`
//   (the GPU machine has no node_modules: the harness carries the package);
// - fetch of file: URLs (the backend fetches kernels/wgsl/*.wgsl relative to its own module,
//   which under node is a file: URL; node's fetch refuses that scheme);
// - imports of /backends-js/... and /bench/... (the browser benchmark's absolute paths) from
//   this checkout, so bench/browser/gpulab-lane.mjs runs as it is.
// Here Dawn refuses lavapipe ("Vulkan shaderUniform*ArrayDynamicIndexing required"), so
// requestAdapter answers null and the lane is UNAVAILABLE: a GPU machine's lane only.
import { readFile } from 'node:fs/promises';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const ROOT = new URL('../../../', import.meta.url);

/** Dawn's module: GPULAB_DAWN (a path or URL of the package's index.js) or the `webgpu` package. */
async function loadDawn() {
  const where = process.env.GPULAB_DAWN;
  const spec = !where ? 'webgpu' : where.includes('://') ? where : pathToFileURL(where).href;
  return import(spec);
}

/** @param {unknown} input */
function fileUrlOf(input) {
  if (input instanceof URL) return input.protocol === 'file:' ? input : null;
  if (typeof input === 'string' && input.startsWith('file:')) return new URL(input);
  return null;
}

const nodeFetch = globalThis.fetch;
/** fetch that also reads file: URLs (404 when the file is missing, as a server would answer). */
globalThis.fetch = async (input, init) => {
  const url = fileUrlOf(input);
  if (!url) return nodeFetch(input, init);
  try {
    return new Response(await readFile(url), { status: 200 });
  } catch {
    return new Response(null, { status: 404, statusText: 'Not Found' });
  }
};

/** Install Dawn as navigator.gpu; without Dawn, say why on stderr and leave navigator.gpu
 * unset, so the backend answers UNAVAILABLE ("navigator.gpu is missing") like a page would. */
async function installDawn() {
  let dawn;
  try {
    dawn = await loadDawn();
  } catch (err) {
    process.stderr.write(`pylib/gpulab/conformance/dawn_setup.mjs: Dawn (npm webgpu) not loaded: ${err}\n`);
    return;
  }
  Object.assign(globalThis, dawn.globals);
  const flags = (process.env.GPULAB_DAWN_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const gpu = dawn.create(flags);
  if (globalThis.navigator) {
    Object.defineProperty(globalThis.navigator, 'gpu', { value: gpu, configurable: true });
  } else {
    globalThis.navigator = /** @type {Navigator} */ (/** @type {unknown} */ ({ gpu }));
  }
}

register('./dawn_resolve.mjs', import.meta.url, { data: { root: ROOT.href } });
await installDawn();
