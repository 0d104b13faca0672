// Module resolve hook of pylib/gpulab/conformance/dawn_setup.mjs: the browser pages' absolute imports
// (/backends-js/..., /bench/...) resolve to files of this checkout under node.
const PREFIXES = ['/backends-js/', '/bench/', '/kernels/'];
/** @type {string} */
let root = '';

/** @param {{root: string}} data */
export function initialize(data) {
  root = data.root;
}

/** @param {string} specifier @param {object} context @param {Function} next */
export function resolve(specifier, context, next) {
  if (PREFIXES.some((p) => specifier.startsWith(p))) {
    return next(new URL(specifier.slice(1), root).href, context);
  }
  return next(specifier, context);
}
