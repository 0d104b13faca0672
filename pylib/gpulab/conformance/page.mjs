// Browser lane of the conformance runner. Exposes window.gpulabConformance.run(backend,
// allowSoftware, cases, withoutKernels?, breakOps?), which imports the runtime the same way an
// embedding page would and answers like node_executor.mjs (see run_cases.mjs), and machine(),
// the browser's own description of itself for the report's machine summary.
import { runCases } from './run_cases.mjs';

/** withoutKernels, breakOps: test hooks (run_cases.mjs). */
async function run(backend, allowSoftware, cases, withoutKernels = [], breakOps = []) {
  let createRuntime;
  try {
    ({ createRuntime } = await import('/backends-js/src/runtime.mjs'));
  } catch (err) {
    const reason = `/backends-js/src/runtime.mjs cannot be imported: ${err.message}`;
    return { lane: { available: false, reason }, results: [] };
  }
  return runCases(createRuntime, { backend, allowSoftware, withoutKernels, breakOps }, cases);
}

/** The WebGPU adapter as the browser describes it (null where there is no WebGPU). */
async function webgpuAdapter() {
  if (!globalThis.navigator?.gpu) return null;
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { available: false };
  const info = adapter.info ?? {};
  return { available: true, vendor: info.vendor ?? '', architecture: info.architecture ?? '',
    description: info.description ?? '', device: info.device ?? '',
    fallback: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false) };
}

/** The WebGL2 renderer strings (the unmasked ones where the browser gives them). */
function webgl2Renderer() {
  const gl = new OffscreenCanvas(1, 1).getContext('webgl2');
  if (!gl) return null;
  const ext = gl.getExtension('WEBGL_debug_renderer_info');
  return { vendor: gl.getParameter(ext ? ext.UNMASKED_VENDOR_WEBGL : gl.VENDOR),
    renderer: gl.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : gl.RENDERER),
    version: gl.getParameter(gl.VERSION) };
}

async function machine() {
  const safely = async (/** @type {() => any} */ fn) => {
    try { return await fn(); } catch (err) { return { error: String(err?.message ?? err) }; }
  };
  return { userAgent: navigator.userAgent, webgpu: await safely(webgpuAdapter),
    webgl2: await safely(webgl2Renderer) };
}

window.gpulabConformance = { run, machine };
