// The WebAssembly backend: the no_std Rust kernels of kernels/wasm, compiled to
// kernels/kernels.wasm (SIMD128), run from JS in node and in browsers. The fast CPU path.
//
// JS owns the module's linear memory (wasm/arena.mjs); kernels get pointers and sizes.
// A prepared program (wasm/program.mjs) plans each node's kernel once, from the registry
// keyed by op name (wasm/registry.mjs), and replays the steps on every run.
//
// Engines without SIMD128 are refused with UNAVAILABLE (one build keeps the numerics in one
// place; every browser this project targets has had SIMD since 2021-2023).
//
// Test hooks (optional): hooks.simdSupported() overrides the SIMD probe, hooks.kernelsUrl
// loads another build; the backend fills in hooks.wasmStats() (arena statistics).
import { GpuLabError } from '../errors.mjs';
import { kernelFile } from '../kernel-files.mjs';
import { Arena } from './wasm/arena.mjs';
import { instantiate, loadKernels } from './wasm/loader.mjs';
import { WasmProgram } from './wasm/program.mjs';
import { BACKEND } from './wasm/registry.mjs';
import { supportsGraph } from '../kernels.mjs';

export const name = 'wasm';

/**
 * Which nodes of a checked graph this backend has no kernel for (answered from the shared
 * registry, before any device work).
 * @param {any} checked @param {{without?: Iterable<string>}} [options]
 */
export function supports(checked, options) {
  return supportsGraph(BACKEND, checked, options);
}

/** The committed build at the repository (or served) root. */
const KERNELS_URL = kernelFile('kernels.wasm');

/**
 * @param {{allowSoftware?: boolean, hooks?: Record<string, any>}} [opts] allowSoftware is
 *   irrelevant here: these kernels are the CPU path by design, not a software GPU.
 */
export async function createBackend({ hooks = {} } = {}) {
  const exports = await instantiate(await loadKernels(KERNELS_URL, hooks));
  const memory = /** @type {WebAssembly.Memory} */ (exports.memory);
  const arena = new Arena(memory, exports.__heap_base.value);
  /** @type {Float32Array} */
  let view = new Float32Array(memory.buffer);
  /** A float view of memory, renewed after the memory grew (growing detaches the old one). */
  const heap = () => {
    if (view.buffer !== memory.buffer) view = new Float32Array(memory.buffer);
    return view;
  };
  const wasm = { exports, arena, heap };
  /** @type {Set<WasmProgram>} */
  const programs = new Set();
  let disposed = false;
  if (hooks && typeof hooks === 'object') hooks.wasmStats = () => arena.stats();

  return {
    name,
    info: {
      vendor: 'gpu-lab',
      architecture: 'wasm32+simd128',
      description: 'WebAssembly kernels (CPU)',
      software: false,
    },
    stats: () => arena.stats(),

    /**
     * @param {any} checked
     * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} [session]
     */
    async prepare(checked, session = {}) {
      if (disposed) throw new GpuLabError('DISPOSED', 'wasm backend was disposed');
      const program = new WasmProgram(wasm, checked, session);
      programs.add(program);
      const dispose = program.dispose.bind(program);
      program.dispose = () => {
        programs.delete(program);
        dispose();
      };
      return program;
    },

    dispose() {
      disposed = true;
      for (const p of [...programs]) p.dispose();
    },
  };
}
