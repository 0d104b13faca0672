// Students' own WGSL kernels on the WebGPU backend: a plan step of kernel "wgsl"
// compiles the node's source (not a kernels/wgsl file). Compiler errors come from
// getCompilationInfo() as BACKEND errors with the line, column and message, the offending line
// and a caret (the form wgsl-op.mjs gives binding errors, which the notebook highlights). The
// bind group layout follows the convention (docs/playground.md): storage buffers at 0..n-1
// (inputs read-only, results read-write), the params uniform at n, then the loop budget's flag
// (wgsl-budget.mjs) when the source has a loop, then on software adapters the chunk uniform
// (student-chunks.mjs) when the dispatch can be split: the source compiled is the rewritten one.
import { GpuLabError } from '../../errors.mjs';
import { LIMITS } from '../../optable.mjs';
import { budgetLoops, originalColumn } from '../../wgsl-budget.mjs';
import { sourceLine } from '../../wgsl-op.mjs';
import { chunkSource } from './student-chunks.mjs';

/** The run's error when a loop passed the budget (the same words as native/student.py). @param {number} id */
export function budgetMessage(id) {
  return `node ${id} (wgsl): the kernel passed its loop budget of ${LIMITS.max_loop_iterations} ` +
    'loop iterations per invocation (max_loop_iterations: every entry and iteration of a loop ' +
    'counts); a loop past it is stopped and the results are not returned: the session is ' +
    'poisoned, the runtime works on';
}

/**
 * The protocol error for compiler messages: the first error, located in the student's source
 * (the compiler's column in the budgeted source mapped back: wgsl-budget.mjs).
 * @param {{id: number}} node @param {string} source
 * @param {{lineNum: number, linePos: number, message: string}[]} errors
 * @param {import('../../wgsl-budget.mjs').Insertion[]} [insertions]
 * @param {(line: number, column: number) => number} [column] the compiled source's column
 *   as the student's (else: originalColumn with `insertions`)
 */
export function compileError(node, source, errors, insertions = [],
  column = (line, col) => originalColumn(source, insertions, line, col)) {
  const raw = errors[0];
  // a GPUCompilationMessage's fields are getters on its prototype: copied by name, not spread
  const first = { lineNum: raw.lineNum, message: raw.message,
    linePos: raw.lineNum ? column(raw.lineNum, raw.linePos) : 0 };
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

/**
 * The source compiled for a student's kernel: on software adapters (`chunks`) the chunk
 * rewrite first (student-chunks.mjs; its binding after the flag's; null where it cannot be
 * sure), then the loop budget on that text; `column` maps a compiler's column back through
 * both to the student's.
 * @param {string} source @param {number} flagAt the loop budget flag's binding
 * @param {boolean} chunks
 */
export function rewriteStudent(source, flagAt, chunks) {
  const chunked = chunks ? chunkSource(source, flagAt + 1) : null;
  const text = chunked ? chunked.source : source;
  const budgeted = budgetLoops(text, LIMITS.max_loop_iterations, flagAt);
  const column = (/** @type {number} */ line, /** @type {number} */ col) => {
    const inText = originalColumn(text, budgeted.insertions, line, col);
    return chunked ? originalColumn(source, chunked.insertions, line, inText) : inText;
  };
  return { budgeted, chunked, column };
}

/**
 * Compiled kernels kept per device, least recently used dropped first (a notebook can send any
 * number of distinct sources; native/student.py keeps the same count). Programs that hold a
 * dropped pipeline keep it alive.
 */
export const MAX_STUDENT_KERNELS = 32;

/** Pipelines of students' kernels on one device, by source (a kernel is compiled once). */
export class StudentKernels {
  /**
   * @param {import('./device.mjs').GpuDevice} gpu @param {number} [max] kernels kept
   * @param {boolean} [chunks] rewrite kernels to run in chunks (software adapters)
   */
  constructor(gpu, max = MAX_STUDENT_KERNELS, chunks = false) {
    this.gpu = gpu;
    this.max = max;
    this.chunks = chunks;
    /** @type {Map<string, Promise<import('./kernels.mjs').Kernel & {firstStorage: number, uniformBinding: number, budgetBinding: number|null, chunk: {binding: number, workgroupSize: number[]}|null}>>} */
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
    if (p) {
      this.cache.delete(key); // a Map keeps insertion order: re-inserted, it is the newest
      this.cache.set(key, p);
      return p;
    }
    p = this.build(node, storage, uniform);
    this.cache.set(key, p);
    p.catch(() => { if (this.cache.get(key) === p) this.cache.delete(key); });
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= this.max) break;
      this.cache.delete(oldest);
    }
    return p;
  }

  /** @param {any} node @param {number} storage @param {boolean} uniform */
  async build(node, storage, uniform) {
    const { gpu } = this;
    const source = node.attrs.source;
    const what = `node ${node.id} (wgsl)`;
    const device = gpu.device;
    const flagAt = storage + (uniform ? 1 : 0);
    const { budgeted, chunked, column } = rewriteStudent(source, flagAt, this.chunks);
    gpu.check();
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: budgeted.source, label: what });
    const scoped = device.popErrorScope();
    const info = await gpu.race(module.getCompilationInfo(), what);
    const errors = info.messages.filter((m) => m.type === 'error');
    const scopeError = await gpu.race(scoped, what);
    if (errors.length) throw compileError(node, source, errors, [], column);
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
    if (budgeted.loops) entries.push({ binding: flagAt, visibility, buffer: { type: 'storage' } });
    if (chunked) entries.push({ binding: flagAt + 1, visibility, buffer: { type: 'uniform' } });
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
    return { pipeline, layout, uniform, firstStorage: 0, uniformBinding: storage,
      budgetBinding: budgeted.loops ? flagAt : null,
      chunk: chunked ? { binding: flagAt + 1, workgroupSize: chunked.workgroupSize } : null };
  }
}
