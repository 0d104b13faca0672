// Students' own WGSL kernels on the WebGPU backend (issue 21): a plan step of kernel "wgsl"
// compiles the node's source (not a kernels/wgsl file). Compiler errors come from
// getCompilationInfo() as BACKEND errors with the line, column and message, the offending line
// and a caret (the form wgsl-op.mjs gives binding errors, which the notebook highlights). The
// bind group layout follows the convention (docs/playground.md): storage buffers at 0..n-1
// (inputs read-only, results read-write), the params uniform at n.
import { GpuLabError } from '../../errors.mjs';
import { sourceLine } from '../../wgsl-op.mjs';

/**
 * The protocol error for compiler messages: the first error, located in the student's source.
 * @param {{id: number}} node @param {string} source
 * @param {{lineNum: number, linePos: number, message: string}[]} errors
 */
export function compileError(node, source, errors) {
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more error(s))` : '';
  if (!first.lineNum) {
    return new GpuLabError('BACKEND', `node ${node.id} (wgsl): WGSL compile error: ` +
      `${first.message}${more}`, node.id);
  }
  const caret = `${' '.repeat(4)} | ${' '.repeat(Math.max(0, first.linePos - 1))}^`;
  return new GpuLabError('BACKEND', `node ${node.id} (wgsl): WGSL compile error at line ` +
    `${first.lineNum}, column ${first.linePos}: ${first.message}${more}\n` +
    `${sourceLine(source, first.lineNum)}\n${caret}`, node.id);
}

/** Pipelines of students' kernels on one device, by source (a kernel is compiled once). */
export class StudentKernels {
  /** @param {import('./device.mjs').GpuDevice} gpu */
  constructor(gpu) {
    this.gpu = gpu;
    /** @type {Map<string, Promise<import('./kernels.mjs').Kernel & {firstStorage: number, uniformBinding: number}>>} */
    this.cache = new Map();
    this.pipelinesCreated = 0;
  }

  /**
   * The pipeline for a checked wgsl node (its source, its binding counts).
   * @param {{id: number, operands: number[], attrs: Record<string, any>}} node
   */
  get(node) {
    const storage = node.operands.length + node.attrs.results.length;
    const uniform = Object.keys(node.attrs.params).length > 0;
    const key = `${storage}|${node.operands.length}|${uniform}|${node.attrs.source}`;
    let p = this.cache.get(key);
    if (!p) {
      p = this.build(node, storage, uniform);
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    return p;
  }

  /** @param {any} node @param {number} storage @param {boolean} uniform */
  async build(node, storage, uniform) {
    const { gpu } = this;
    const source = node.attrs.source;
    const what = `node ${node.id} (wgsl)`;
    const device = gpu.device;
    gpu.check();
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: source, label: what });
    const scoped = device.popErrorScope();
    const info = await gpu.race(module.getCompilationInfo(), what);
    const errors = info.messages.filter((m) => m.type === 'error');
    const scopeError = await gpu.race(scoped, what);
    if (errors.length) throw compileError(node, source, errors);
    if (scopeError) {
      throw new GpuLabError('BACKEND', `${what}: WGSL compile error: ${scopeError.message}`, node.id);
    }
    const visibility = GPUShaderStage.COMPUTE;
    /** @type {GPUBindGroupLayoutEntry[]} */
    const entries = [];
    for (let b = 0; b < storage; b++) {
      const type = b < node.operands.length ? 'read-only-storage' : 'storage';
      entries.push({ binding: b, visibility, buffer: { type } });
    }
    if (uniform) entries.push({ binding: storage, visibility, buffer: { type: 'uniform' } });
    const layout = await gpu.guard(what, () => device.createBindGroupLayout({ entries, label: what }));
    const pipelineLayout = await gpu.guard(what, () =>
      device.createPipelineLayout({ bindGroupLayouts: [layout], label: what }));
    let pipeline;
    try {
      pipeline = await gpu.race(device.createComputePipelineAsync({
        layout: pipelineLayout, compute: { module, entryPoint: 'main' }, label: what,
      }), `pipeline for ${what}`);
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      throw new GpuLabError('BACKEND', `${what}: the WGSL kernel does not make a pipeline: ${text}`,
        node.id);
    }
    this.pipelinesCreated += 1;
    return { pipeline, layout, uniform, firstStorage: 0, uniformBinding: storage };
  }
}
