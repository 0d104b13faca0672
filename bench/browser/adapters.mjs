// What the page's WebGL2 and WebGPU adapters are, for labelling the TF.js lanes (gpu-lab's own
// rows carry their backend's info). Uses gpu-lab's software-renderer rules, so "software"
// means the same in every row.
import { adapterFacts, describeAdapter, softwareName } from '/backends-js/src/backends/webgpu/adapter.mjs';
import { isSoftwareRenderer } from '/backends-js/src/backends/webgl2/context.mjs';

/**
 * @param {string} api cpu, wasm, webgl2 or webgpu
 * @returns {Promise<{description: string, software: boolean}>}
 */
export async function probeAdapter(api) {
  if (api === 'webgpu') return probeWebGpu();
  if (api === 'webgl2') return probeWebGl2();
  return { description: 'CPU', software: false };
}

async function probeWebGpu() {
  const adapter = await globalThis.navigator?.gpu?.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return { description: 'no WebGPU adapter', software: false };
  const facts = await adapterFacts(adapter);
  const soft = softwareName(facts);
  return { description: describeAdapter(facts, soft ?? 'WebGPU'), software: soft !== null };
}

function probeWebGl2() {
  const gl = new OffscreenCanvas(1, 1).getContext('webgl2');
  if (!gl) return { description: 'no WebGL2', software: false };
  const dbg = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(gl.getParameter(dbg ? dbg.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  gl.getExtension('WEBGL_lose_context')?.loseContext();
  return { description: renderer, software: isSoftwareRenderer(renderer) };
}
