// The backend registry: name -> lazy import of its module. A module that is missing or cannot
// load is simply an unavailable backend; `auto` tries BACKEND_ORDER, fastest first, per graph
// (the first that is available and whose supports(checked) says it has every kernel).
import { GpuLabError } from '../errors.mjs';
import { softwareHint } from './software-hint.mjs';

/** @type {Record<string, () => Promise<any>>} */
export const BACKENDS = {
  webgpu: () => import('./webgpu.mjs'),
  webgl2: () => import('./webgl2.mjs'),
  wasm: () => import('./wasm.mjs'),
  cpu: () => import('./cpu.mjs'),
};

export const BACKEND_ORDER = Object.freeze(['webgpu', 'webgl2', 'wasm', 'cpu']);

/** @param {unknown} err */
function reasonOf(err) {
  if (err instanceof GpuLabError) return err.message;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/**
 * Load and open one backend, or throw GpuLabError('UNAVAILABLE') with the reason.
 * @param {string} name
 * @param {{allowSoftware?: boolean, softwareHint?: string, hooks?: object}} options
 * @param {Record<string, () => Promise<any>>} [registry]
 */
export async function openBackend(name, options, registry = BACKENDS) {
  const load = Object.hasOwn(registry, name) ? registry[name] : undefined;
  if (!load) {
    throw new GpuLabError('UNAVAILABLE', `unknown backend "${name}" (known: ` +
      `${Object.keys(registry).join(', ')})`);
  }
  let mod;
  try {
    mod = await load();
  } catch (err) {
    throw new GpuLabError('UNAVAILABLE', `${name} backend module could not be loaded: ` +
      reasonOf(err), null, { cause: err });
  }
  let backend;
  try {
    backend = await mod.createBackend(options);
  } catch (err) {
    // Whatever stops a backend from opening (no API, refused adapter, a failed device
    // request) makes it unavailable here; the reason travels in the message.
    throw new GpuLabError('UNAVAILABLE', `${name}: ${reasonOf(err)}`, null, { cause: err });
  }
  // The module's supports(checked) answers for the opened backend too (runtime asks it per
  // graph, before prepare).
  if (typeof mod.supports === 'function' && typeof backend.supports !== 'function') {
    backend.supports = mod.supports;
  }
  if (backend.info?.software && !options.allowSoftware) {
    backend.dispose?.();
    throw new GpuLabError('UNAVAILABLE', `${name}: refused software adapter ` +
      `${backend.info.description ?? ''} (${softwareHint(options)})`);
  }
  return backend;
}
