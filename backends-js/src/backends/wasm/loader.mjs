// Finds, checks and compiles kernels.wasm once per JS realm: fs under node, fetch in browsers.
import { GpuLabError } from '../../errors.mjs';

/** The kernel ABI this loader speaks (kernels.wasm exports `abi_version`). */
export const ABI_VERSION = 1;

/** A module whose only function returns an i8x16.splat: valid iff the engine has SIMD128. */
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x0a, 0x08, 0x01, 0x06, 0x00, 0x41, 0x00, 0xfd, 0x0f, 0x0b, // i32.const 0; i8x16.splat; end
]);

/** Whether this engine validates WebAssembly SIMD128. */
export function simdSupported() {
  return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
}

const isNode = typeof process === 'object' && !!process.versions?.node;

/** @returns {Promise<Uint8Array>} */
async function readBytes(/** @type {URL} */ url) {
  if (isNode && url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return readFile(url);
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`HTTP ${res.status} for ${url}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** @type {Promise<WebAssembly.Module>|null} */
let compiled = null;

/**
 * The compiled kernels.wasm (cached). UNAVAILABLE when WebAssembly or SIMD128 is missing or the
 * file cannot be read; a stale build (other ABI) is BACKEND.
 * @param {URL} url where kernels.wasm is
 * @param {{simdSupported?: () => boolean, kernelsUrl?: URL}} [hooks]
 */
export async function loadKernels(url, hooks = {}) {
  const hasSimd = hooks.simdSupported ?? simdSupported;
  if (typeof WebAssembly !== 'object') {
    throw new GpuLabError('UNAVAILABLE', 'wasm backend: this environment has no WebAssembly');
  }
  if (!hasSimd()) {
    throw new GpuLabError('UNAVAILABLE', 'wasm backend: this engine lacks WebAssembly SIMD ' +
      '(simd128), which kernels.wasm requires (Chrome 91+, Firefox 89+, Safari 16.4+, node 16.4+)');
  }
  if (hooks.kernelsUrl) return compile(hooks.kernelsUrl);
  compiled ??= compile(url).catch((err) => {
    compiled = null;
    throw err;
  });
  return compiled;
}

async function compile(/** @type {URL} */ url) {
  let bytes;
  try {
    bytes = await readBytes(url);
  } catch (err) {
    throw new GpuLabError('UNAVAILABLE', `wasm backend: cannot read ${url.href}: ` +
      `${/** @type {Error} */ (err).message}`);
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (err) {
    throw new GpuLabError('BACKEND', `wasm backend: kernels.wasm does not compile: ` +
      `${/** @type {Error} */ (err).message}`);
  }
}

/** Instantiates with its own memory and checks the ABI. */
export async function instantiate(/** @type {WebAssembly.Module} */ module) {
  const instance = await WebAssembly.instantiate(module, {});
  const exports = /** @type {Record<string, any>} */ (instance.exports);
  const abi = typeof exports.abi_version === 'function' ? exports.abi_version() : -1;
  if (abi !== ABI_VERSION) {
    throw new GpuLabError('BACKEND', `wasm backend: kernels.wasm has ABI ${abi}, this loader ` +
      `needs ${ABI_VERSION}; rebuild with scripts/build-wasm.sh`);
  }
  return exports;
}
