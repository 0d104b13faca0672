// The pipeline cache of the WebGPU backend, keyed by kernel name (the WGSL file stem the plan
// names): each kernel's source is fetched once per page, its shader module and pipelines are
// built once per device and per set of `override` constants. (Which ops the backend has
// kernels for is the planner's rule table, in the shared registry: ../../kernels.mjs.)

import { GpuLabError } from '../../errors.mjs';
import { errorText } from './adapter.mjs';

/** @type {Map<string, Promise<string>>} WGSL text by URL, shared by every device of the page */
const SOURCES = new Map();

/**
 * Fetch a kernel's WGSL once per page.
 * @param {URL} url
 * @param {string} kernel
 * @returns {Promise<string>}
 */
export function loadSource(url, kernel) {
  const k = url.href;
  let text = SOURCES.get(k);
  if (!text) {
    text = fetchText(url, kernel);
    SOURCES.set(k, text);
    text.catch(() => SOURCES.delete(k)); // a failed fetch may be retried later
  }
  return text;
}

/** @param {URL} url @param {string} kernel */
async function fetchText(url, kernel) {
  const cannot = (/** @type {string} */ why) =>
    new GpuLabError('BACKEND', `cannot load WGSL kernel "${kernel}" from ${url}: ${why}`);
  let res;
  try {
    res = await fetch(url);
  } catch (err) {
    throw cannot(errorText(err));
  }
  if (!res.ok) throw cannot(`HTTP ${res.status}`);
  return res.text();
}

/**
 * The group-0 bindings a WGSL module declares, with their binding types:
 * `var<uniform>` -> 'uniform', `var<storage, read>` -> 'read-only-storage',
 * `var<storage, read_write>` -> 'storage'. Parsing the declarations (instead of layout 'auto')
 * keeps bindings that one entry point does not use valid in the bind group. A module with
 * several entry points may declare two variables at one binding (rows.wgsl: softmax's result
 * and cross_entropy's targets); there the variable `entry` uses decides (its function and the
 * functions it calls, by name).
 * @param {string} source @param {string} [entry]
 * @returns {Map<number, GPUBufferBindingType>}
 */
export function declaredBindings(source, entry) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const attrs = /((?:@\s*\w+\s*\(\s*\d+\s*\)\s*)+)/.source;
  const space = /var\s*<\s*(uniform|storage)\s*(?:,\s*(read_write|read))?\s*>\s*(\w+)/.source;
  const decl = new RegExp(attrs + space, 'g');
  /** @type {{binding: number, type: GPUBufferBindingType, name: string}[]} */
  const found = [];
  for (const m of code.matchAll(decl)) {
    const group = /@\s*group\s*\(\s*(\d+)\s*\)/.exec(m[1]);
    const binding = /@\s*binding\s*\(\s*(\d+)\s*\)/.exec(m[1]);
    if (!group || !binding || group[1] !== '0') continue;
    let type = 'read-only-storage';
    if (m[2] === 'uniform') type = 'uniform';
    else if (m[3] === 'read_write') type = 'storage';
    found.push({ binding: Number(binding[1]), type: /** @type {GPUBufferBindingType} */ (type),
      name: m[4] });
  }
  const count = (/** @type {number} */ b) => found.filter((d) => d.binding === b).length;
  const used = found.some((d) => count(d.binding) > 1) && entry ? usedNames(code, entry) : null;
  /** @type {Map<number, GPUBufferBindingType>} */
  const out = new Map();
  for (const d of found) {
    if (count(d.binding) > 1 && used && !used.has(d.name)) continue; // another entry's variable
    out.set(d.binding, d.type);
  }
  return out;
}

/**
 * Every identifier an entry point's function reads, with those of the functions it calls.
 * @param {string} code WGSL without comments @param {string} entry
 */
function usedNames(code, entry) {
  /** @type {Map<string, string>} function name -> body */
  const bodies = new Map();
  for (const m of code.matchAll(/\bfn\s+(\w+)\s*\(/g)) {
    const open = code.indexOf('{', m.index);
    let depth = 0;
    let end = open;
    for (; end < code.length; end++) {
      if (code[end] === '{') depth++;
      else if (code[end] === '}' && --depth === 0) break;
    }
    bodies.set(m[1], code.slice(open, end + 1));
  }
  const seen = new Set();
  const names = new Set();
  const todo = [entry];
  while (todo.length) {
    const fn = /** @type {string} */ (todo.pop());
    if (seen.has(fn) || !bodies.has(fn)) continue;
    seen.add(fn);
    for (const [id] of (bodies.get(fn) ?? '').matchAll(/\b[A-Za-z_]\w*\b/g)) {
      names.add(id);
      if (bodies.has(id)) todo.push(id);
    }
  }
  return names;
}

/**
 * @typedef {{pipeline: GPUComputePipeline, layout: GPUBindGroupLayout, uniform: boolean}} Kernel
 * @typedef {{module: GPUShaderModule, source: string}} Compiled
 * @typedef {{kernel: string, entry?: string, overrides?: Record<string, number>,
 *   bindings: number[]}} KernelUse
 */

/** Shader modules and pipelines of one device. */
export class PipelineCache {
  /**
   * @param {import('./device.mjs').GpuDevice} gpu
   * @param {(kernel: string) => URL} urlOf where a kernel's WGSL lives
   * @param {{transformWgsl?: (kernel: string, source: string) => string,
   *   kernelSource?: (kernel: string) => string | null | undefined}} hooks test hooks
   */
  constructor(gpu, urlOf, hooks = {}) {
    this.gpu = gpu;
    this.urlOf = urlOf;
    this.hooks = hooks;
    /** @type {Map<string, Promise<Compiled>>} */
    this.modules = new Map();
    /** @type {Map<string, Promise<Kernel>>} */
    this.pipelines = new Map();
    this.pipelinesCreated = 0;
  }

  /**
   * The pipeline for one plan step (created on first use, then cached).
   * @param {KernelUse} use
   * @returns {Promise<Kernel>}
   */
  get(use) {
    const entry = use.entry || 'main';
    const overrides = use.overrides || {};
    const names = Object.keys(overrides).sort();
    const constants = names.map((n) => `${n}=${overrides[n]}`);
    const k = [use.kernel, entry, use.bindings.length, ...constants].join('|');
    let p = this.pipelines.get(k);
    if (!p) {
      p = this.build(use.kernel, entry, overrides, use.bindings.length);
      this.pipelines.set(k, p);
      p.catch(() => this.pipelines.delete(k));
    }
    return p;
  }

  /** @param {string} kernel */
  module(kernel) {
    let p = this.modules.get(kernel);
    if (!p) {
      p = this.compile(kernel);
      this.modules.set(kernel, p);
      p.catch(() => this.modules.delete(kernel));
    }
    return p;
  }

  /** @param {string} kernel */
  async compile(kernel) {
    const given = this.hooks.kernelSource?.(kernel);
    let source = given ?? (await loadSource(this.urlOf(kernel), kernel));
    if (this.hooks.transformWgsl) source = this.hooks.transformWgsl(kernel, source);
    const what = `WGSL kernel "${kernel}"`;
    const module = await this.gpu.guard(what, () =>
      this.gpu.device.createShaderModule({ code: source, label: kernel }),
    );
    // Chromium reports WGSL errors through the validation scope above; compilation info is a
    // second look for browsers that only put them there.
    const info = typeof module.getCompilationInfo === 'function'
      ? await this.gpu.race(module.getCompilationInfo(), what) : { messages: [] };
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      const text = errors.map((m) => `line ${m.lineNum}:${m.linePos}: ${m.message}`).join('; ');
      throw new GpuLabError('BACKEND', `WGSL compile error in kernel "${kernel}": ${text}`);
    }
    return { module, source };
  }

  /**
   * @param {string} kernel @param {string} entry
   * @param {Record<string, number>} overrides @param {number} count storage bindings 1..count
   * @returns {Promise<Kernel>}
   */
  async build(kernel, entry, overrides, count) {
    const { module, source } = await this.module(kernel);
    const bindings = declaredBindings(source, entry);
    const uniform = bindings.get(0) === 'uniform';
    const visibility = GPUShaderStage.COMPUTE;
    /** @type {GPUBindGroupLayoutEntry[]} */
    const entries = uniform ? [{ binding: 0, visibility, buffer: { type: 'uniform' } }] : [];
    for (let b = 1; b <= count; b++) {
      const type = bindings.get(b);
      if (!type || type === 'uniform') {
        throw new GpuLabError('BACKEND', `kernel "${kernel}" declares no storage buffer at ` +
          `@group(0) @binding(${b}), but the plan binds one there`);
      }
      entries.push({ binding: b, visibility, buffer: { type } });
    }
    const what = `pipeline for kernel "${kernel}" (${entry})`;
    const layout = await this.gpu.guard(what, () =>
      this.gpu.device.createBindGroupLayout({ entries, label: kernel }),
    );
    const pipelineLayout = await this.gpu.guard(what, () =>
      this.gpu.device.createPipelineLayout({ bindGroupLayouts: [layout], label: kernel }),
    );
    const pipeline = await this.gpu.race(
      this.gpu.device.createComputePipelineAsync({
        layout: pipelineLayout,
        compute: { module, entryPoint: entry, constants: overrides },
        label: `${kernel}:${entry}`,
      }),
      what,
    );
    this.pipelinesCreated += 1;
    return { pipeline, layout, uniform };
  }
}
