// The WebGPU presenter: a render pass reads the session's storage buffer in the fragment
// shader (one fragment per tensor element) and writes the canvas's current texture. The
// tensor never leaves the GPU: no copy to a mappable buffer, no map.
import { modeNumber } from './colors.mjs';
import { registerPresenter } from './registry.mjs';

/** Dtype -> how the shader reads a 32-bit word (float bits, i32, u32; bool is u32 0/1). */
const WORD_KIND = { float32: 0, int32: 1, uint32: 2, bool: 2 };

/** present.wgsl, fetched once (the native offscreen presenter reads the same file). */
let shaderText = null;
const loadShader = () => {
  shaderText ??= fetch(new URL('./present.wgsl', import.meta.url)).then((r) => {
    if (!r.ok) throw new Error(`present.wgsl: HTTP ${r.status}`);
    return r.text();
  }).catch((err) => { shaderText = null; throw err; });
  return shaderText;
};

/** One pipeline per device and canvas format. @type {WeakMap<GPUDevice, Map<string, GPURenderPipeline>>} */
const PIPELINES = new WeakMap();

/** @param {GPUDevice} device @param {GPUTextureFormat} format @param {string} code */
function pipelineFor(device, format, code) {
  let byFormat = PIPELINES.get(device);
  if (!byFormat) { byFormat = new Map(); PIPELINES.set(device, byFormat); }
  let pipeline = byFormat.get(format);
  if (!pipeline) {
    const module = device.createShaderModule({ code, label: 'gpu-lab present' });
    pipeline = device.createRenderPipeline({
      label: 'gpu-lab present', layout: 'auto',
      vertex: { module, entryPoint: 'vs' },
      fragment: { module, entryPoint: 'fs', targets: [{ format }] },
      primitive: { topology: 'triangle-list' },
    });
    byFormat.set(format, pipeline);
  }
  return pipeline;
}

/** The view's uniform block (View above), 32 bytes. @param {import('./registry.mjs').View} view */
function viewBytes(view) {
  const bytes = new ArrayBuffer(32);
  new Uint32Array(bytes, 0, 4).set([view.width, view.height, WORD_KIND[view.dtype] ?? 0,
    modeNumber(view.colouring)]);
  new Float32Array(bytes, 16, 2).set([view.colouring.vmin, view.colouring.vmax]);
  return bytes;
}

/** @type {import('./registry.mjs').Presenter} */
const webgpuPresenter = {
  async open(program, canvas, view) {
    const code = await loadShader();
    const gpu = program.ctx.gpu;
    const device = gpu.device;
    canvas.width = view.width;
    canvas.height = view.height;
    const context = /** @type {GPUCanvasContext} */ (canvas.getContext('webgpu'));
    const format = navigator.gpu.getPreferredCanvasFormat();
    context.configure({ device, format, alphaMode: 'opaque' });
    const pipeline = pipelineFor(device, format, code);
    const uniform = device.createBuffer({ size: 32, label: 'gpu-lab present view',
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(uniform, 0, viewBytes(view));
    /** @type {GPUBindGroup|null} */ let group = null;
    /** @type {GPUBuffer|null} */ let bound = null;
    return {
      readsBack: false,
      async draw(prog, id) {
        prog.checkLive();
        const slot = prog.slotOfNode(id);
        await gpu.guard('present', () => {
          if (slot.buffer !== bound) {
            group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [
              { binding: 0, resource: { buffer: slot.buffer, offset: 0, size: slot.bytes } },
              { binding: 1, resource: { buffer: uniform } }] });
            bound = slot.buffer;
          }
          const encoder = device.createCommandEncoder({ label: 'gpu-lab present' });
          const pass = encoder.beginRenderPass({ colorAttachments: [{
            view: context.getCurrentTexture().createView(), loadOp: 'clear', storeOp: 'store',
            clearValue: { r: 0, g: 0, b: 0, a: 1 } }] });
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, group);
          pass.draw(3);
          pass.end();
          device.queue.submit([encoder.finish()]);
        });
        // The frame is done when the GPU is: a lost device rejects here instead of hanging.
        await gpu.race(device.queue.onSubmittedWorkDone(), 'present');
      },
      close() {
        // Not unconfigure(): that can drop the last frame before the page composited it, and
        // the page keeps showing the last frame. The canvas is let go with this surface.
        group = null;
        bound = null;
        uniform.destroy();
      },
    };
  },
};

registerPresenter('webgpu', webgpuPresenter);
