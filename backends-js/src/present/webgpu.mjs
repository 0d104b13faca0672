// The WebGPU presenter: a render pass reads the session's storage buffer in the fragment
// shader (one fragment per tensor element) and writes the canvas's current texture. The
// tensor never leaves the GPU: no copy to a mappable buffer, no map.
import { modeNumber, wgslColour } from './colors.mjs';
import { registerPresenter } from './registry.mjs';

/** Dtype -> how the shader reads a 32-bit word (float bits, i32, u32; bool is u32 0/1). */
const WORD_KIND = { float32: 0, int32: 1, uint32: 2, bool: 2 };

const SHADER = () => `
struct View { width: u32, height: u32, kind: u32, mode: u32, vmin: f32, vmax: f32 }
@group(0) @binding(0) var<storage, read> cells: array<u32>;
@group(0) @binding(1) var<uniform> view: View;
${wgslColour()}
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let xy = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
  return vec4f(xy * 2.0 - 1.0, 0.0, 1.0);
}
fn value(word: u32) -> f32 {
  if (view.kind == 0u) { return bitcast<f32>(word); }
  if (view.kind == 1u) { return f32(bitcast<i32>(word)); }
  return f32(word);
}
@fragment fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  let col = min(u32(p.x), view.width - 1u);
  let row = min(u32(p.y), view.height - 1u);
  let v = value(cells[row * view.width + col]);
  return vec4f(colour(v, view.mode, view.vmin, view.vmax), 1.0);
}`;

/** One pipeline per device and canvas format. @type {WeakMap<GPUDevice, Map<string, GPURenderPipeline>>} */
const PIPELINES = new WeakMap();

/** @param {GPUDevice} device @param {GPUTextureFormat} format */
function pipelineFor(device, format) {
  let byFormat = PIPELINES.get(device);
  if (!byFormat) { byFormat = new Map(); PIPELINES.set(device, byFormat); }
  let pipeline = byFormat.get(format);
  if (!pipeline) {
    const module = device.createShaderModule({ code: SHADER(), label: 'gpu-lab present' });
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
  open(program, canvas, view) {
    const gpu = program.ctx.gpu;
    const device = gpu.device;
    canvas.width = view.width;
    canvas.height = view.height;
    const context = /** @type {GPUCanvasContext} */ (canvas.getContext('webgpu'));
    const format = navigator.gpu.getPreferredCanvasFormat();
    context.configure({ device, format, alphaMode: 'opaque' });
    const pipeline = pipelineFor(device, format);
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
