// Where the kernel files are (ops.json, kernels.wasm, wgsl/, glsl/): one rule for both layouts.
// In the repository this module is backends-js/src/kernel-files.mjs and the files are the
// reviewed ones at the root, kernels/. In the npm package (`npm pack` in backends-js) the
// prepack script copies them into the package as gpu-lab/kernels/ (next to src/), since an
// installed package cannot reach outside node_modules/gpu-lab. The layout is read from this
// module's own URL, so it is synchronous and works the same under node and in browsers.

const TREE_SUFFIX = '/backends-js/src/kernel-files.mjs';

/** Whether this module runs from the source tree (else from an installed package). */
export const inSourceTree = new URL(import.meta.url).pathname.endsWith(TREE_SUFFIX);

/** The kernels folder: <repo>/kernels/ in the tree, <package>/kernels/ when installed. */
export const KERNELS_ROOT = new URL(inSourceTree ? '../../kernels/' : '../kernels/', import.meta.url);

/**
 * A kernel file's URL, e.g. kernelFile('wgsl/unary.wgsl').
 * @param {string} path relative to the kernels folder
 * @returns {URL}
 */
export const kernelFile = (path) => new URL(path, KERNELS_ROOT);
