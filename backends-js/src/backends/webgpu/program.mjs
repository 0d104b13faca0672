// A prepared graph on the WebGPU device: the plan's buffers, uploads, uniforms and bind groups,
// built once; `run(steps)` encodes every step of every session step into ONE command encoder and
// ONE submit, with feeds copied in before each step and carried outputs copied back after it.

import { GpuLabError } from '../../errors.mjs';

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const UNIFORM = () => GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
const STAGING_IN = () => GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const STAGING_OUT = () => GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;

/**
 * @typedef {import('./device.mjs').GpuDevice} GpuDevice
 * @typedef {import('./pool.mjs').BufferPool} BufferPool
 * @typedef {import('./kernels.mjs').KernelRegistry} KernelRegistry
 * @typedef {{id: number, elements: number, node?: number, kind?: string}} PlanBuffer
 * @typedef {{node?: number, kernel: string, entry?: string, overrides?: Record<string, number>,
 *   params?: Array<[string, number|string]>, bindings: number[], dispatch: number[]}} PlanStep
 * @typedef {{buffers: PlanBuffer[], values: Array<{node: number, buffer: number, alias: boolean}>,
 *   uploads?: Array<{buffer: number, node: number}>, steps: PlanStep[],
 *   outputs?: Array<{name: string, buffer: number, shape: number[], node?: number}>}} Plan
 * (docs/plan.md is the reference for every field.)
 * @typedef {{gpu: GpuDevice, pool: BufferPool, kernels: KernelRegistry, counters: {submits: number},
 *   packParams: (params: Array<[string, number]>) => Uint8Array}} Context
 */

/** One GPU storage buffer of the plan: the pooled buffer and the bytes the tensor uses. */
class Slot {
  /** @param {GPUBuffer} buffer @param {number} elements */
  constructor(buffer, elements) {
    this.buffer = buffer;
    /** bytes the tensor occupies (copies, feeds, read-back) */
    this.bytes = elements * 4;
    /** bytes bound: the plan's buffer size, at least 16 (docs/plan.md), so arrayLength agrees natively */
    this.bindBytes = Math.max(16, this.bytes);
  }
}

export class WebGpuProgram {
  /**
   * @param {Context} ctx
   * @param {Plan} plan
   * @param {{nodes: Array<{id: number, op: string, shape: number[], data?: Float32Array,
   *   attrs?: Record<string, unknown>}>}} checked
   * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} session
   */
  constructor(ctx, plan, checked, { feeds = [], carry = new Map(), keep = [] } = {}) {
    this.ctx = ctx;
    this.plan = plan;
    this.checked = checked;
    /** @type {Map<number, number>} node id -> plan buffer id */
    this.nodeBuffer = nodeBuffers(plan);
    // Inputs that no output depends on have no buffer: their feeds and carries change nothing.
    this.feedIds = [...feeds].filter((id) => this.nodeBuffer.has(id));
    const pairs = carry instanceof Map ? [...carry] : Object.entries(carry).map(([k, v]) => [Number(k), v]);
    /** @type {Map<number, number>} input id -> output id */
    this.carry = new Map(pairs.filter(([input]) => this.nodeBuffer.has(input)));
    this.keep = keep;
    /** @type {Map<number, Slot>} plan buffer id -> slot */
    this.slots = new Map();
    /** @type {GPUBuffer[]} every pooled buffer this program holds (returned on dispose) */
    this.owned = [];
    /** @type {Array<{pipeline: GPUComputePipeline, group: GPUBindGroup, dispatch: number[]}>} */
    this.commands = [];
    this.disposed = false;
  }

  /** Build pipelines, allocate and upload; throws BACKEND/LIMIT before any run. */
  async init() {
    const { gpu, kernels } = this.ctx;
    this.checkSizes();
    const pipelines = await Promise.all(this.plan.steps.map((s) => kernels.get(s)));
    await gpu.guard('allocating and uploading the plan', () => {
      this.allocate();
      this.upload();
      this.encodeBindGroups(pipelines);
    });
  }

  /** Refuse tensors past the device's binding size with LIMIT (the planner should already). */
  checkSizes() {
    const max = this.ctx.gpu.device.limits.maxStorageBufferBindingSize;
    for (const b of this.plan.buffers) {
      if (b.elements * 4 > max) {
        throw new GpuLabError('LIMIT', `buffer ${b.id} (node ${b.node}) needs ${b.elements * 4} bytes; this WebGPU device binds at most ${max}`, b.node ?? null);
      }
    }
  }

  allocate() {
    const { pool } = this.ctx;
    for (const b of this.plan.buffers) {
      const slot = new Slot(pool.acquire(STORAGE(), Math.max(16, b.elements * 4), `buffer ${b.id}`), b.elements);
      this.owned.push(slot.buffer);
      this.slots.set(b.id, slot);
    }
  }

  /** Input data and `full` values go up once, at prepare. */
  upload() {
    const queue = this.ctx.gpu.device.queue;
    const byId = nodeMap(this.checked);
    for (const up of this.plan.uploads || []) {
      const node = byId.get(up.node);
      if (!node) throw new GpuLabError('BACKEND', `plan uploads unknown node ${up.node}`);
      const data = uploadData(node);
      if (data) queue.writeBuffer(this.slotOf(up.buffer).buffer, 0, data);
    }
  }

  /**
   * One uniform buffer holds every step's params at aligned offsets; one bind group per step.
   * @param {import('./kernels.mjs').Kernel[]} pipelines
   */
  encodeBindGroups(pipelines) {
    const { gpu, pool } = this.ctx;
    const align = gpu.device.limits.minUniformBufferOffsetAlignment || 256;
    const packed = packUniforms(this.plan.steps, align, this.ctx.packParams);
    let uniform = null;
    if (packed.bytes.byteLength) {
      uniform = pool.acquire(UNIFORM(), packed.bytes.byteLength, 'params');
      this.owned.push(uniform);
      gpu.device.queue.writeBuffer(uniform, 0, packed.bytes);
    }
    this.commands = this.plan.steps.map((step, i) => {
      const k = pipelines[i];
      /** @type {GPUBindGroupEntry[]} */
      const entries = [];
      if (k.uniform) {
        if (!uniform) throw new GpuLabError('BACKEND', `kernel "${step.kernel}" needs params but the plan gives none`);
        entries.push({ binding: 0, resource: { buffer: uniform, offset: packed.offsets[i], size: packed.sizes[i] } });
      }
      step.bindings.forEach((id, j) => {
        const slot = this.slotOf(id);
        entries.push({ binding: j + 1, resource: { buffer: slot.buffer, offset: 0, size: slot.bindBytes } });
      });
      const group = gpu.device.createBindGroup({ layout: k.layout, entries, label: step.kernel });
      return { pipeline: k.pipeline, group, dispatch: step.dispatch };
    });
  }

  /** @param {number} id plan buffer id */
  slotOf(id) {
    const slot = this.slots.get(id);
    if (!slot) throw new GpuLabError('BACKEND', `plan refers to unknown buffer ${id}`);
    return slot;
  }

  /** @param {number} nodeId */
  slotOfNode(nodeId) {
    const id = this.nodeBuffer.get(nodeId);
    if (id === undefined) throw new GpuLabError('BACKEND', `no buffer holds node ${nodeId} in the plan`);
    return this.slotOf(id);
  }

  checkLive() {
    if (this.disposed) throw new GpuLabError('DISPOSED', 'this WebGPU program was disposed');
    this.ctx.gpu.check();
  }

  /**
   * Run the session steps in one submission and read back `readIds` after the last one.
   * @param {Array<Map<number, Float32Array|number[]>>} steps
   * @param {number[]} readIds node ids (outputs or carried inputs)
   * @returns {Promise<Map<number, Float32Array>>}
   */
  async run(steps, readIds = []) {
    this.checkLive();
    const feeds = steps.map((s, i) => this.feedArrays(s, i));
    const reads = readIds.map((id) => this.slotOfNode(id));
    const { gpu, pool } = this.ctx;
    /** @type {{buffer: GPUBuffer, offsets: number[], total: number} | null} */
    let staging = null;
    /** @type {{buffer: GPUBuffer, offsets: number[][]} | null} */
    let inputs = null;
    try {
      await gpu.guard('run', () => {
        const device = gpu.device;
        inputs = this.stageFeeds(feeds);
        const encoder = device.createCommandEncoder({ label: 'gpu-lab run' });
        feeds.forEach((_, s) => {
          if (inputs) this.encodeFeedCopies(encoder, inputs, s);
          this.encodeSteps(encoder);
          this.encodeCarry(encoder);
        });
        staging = this.encodeReads(encoder, reads);
        device.queue.submit([encoder.finish()]);
        this.ctx.counters.submits += 1;
      });
    } catch (err) {
      if (staging) pool.release(/** @type {{buffer: GPUBuffer}} */ (staging).buffer);
      throw err;
    } finally {
      // Queue order: a later writer of this buffer runs after this submission's copies.
      if (inputs) pool.release(/** @type {{buffer: GPUBuffer}} */ (inputs).buffer);
    }
    return this.readBack(staging, readIds, reads, 'run');
  }

  /**
   * The current value of a kept output or a carried input.
   * @param {number} id node id
   */
  async download(id) {
    this.checkLive();
    const reads = [this.slotOfNode(id)];
    const { gpu } = this.ctx;
    const staging = await gpu.guard('download', () => {
      const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab download' });
      const out = this.encodeReads(encoder, reads);
      gpu.device.queue.submit([encoder.finish()]);
      this.ctx.counters.submits += 1;
      return out;
    });
    const values = await this.readBack(staging, [id], reads, 'download');
    return /** @type {Float32Array} */ (values.get(id));
  }

  /**
   * Check one session step's feeds and return them in feed order as Float32Arrays.
   * @param {Map<number, Float32Array|number[]>} step @param {number} index
   */
  feedArrays(step, index) {
    const map = step instanceof Map ? step : new Map(Object.entries(step || {}).map(([k, v]) => [Number(k), v]));
    return this.feedIds.map((id) => {
      const value = map.get(id);
      if (value === undefined) throw new GpuLabError('VALIDATION', `step ${index}: no value fed for input node ${id}`, id);
      const data = value instanceof Float32Array ? value : Float32Array.from(value);
      const bytes = this.slotOfNode(id).bytes;
      if (data.byteLength !== bytes) {
        throw new GpuLabError('VALIDATION', `step ${index}: input node ${id} needs ${bytes / 4} values, got ${data.length}`, id);
      }
      return data;
    });
  }

  /**
   * One step: write feeds straight into the input buffers. Several steps: all feeds go into one
   * staging buffer first (writes land before the submit), copied in before each step.
   * @param {Float32Array[][]} feeds
   * @returns {{buffer: GPUBuffer, offsets: number[][]} | null}
   */
  stageFeeds(feeds) {
    const queue = this.ctx.gpu.device.queue;
    if (feeds.length <= 1 || this.feedIds.length === 0) {
      (feeds[0] || []).forEach((data, j) => queue.writeBuffer(this.slotOfNode(this.feedIds[j]).buffer, 0, data));
      return null;
    }
    let total = 0;
    const offsets = feeds.map((arrays) => arrays.map((a) => {
      const at = total;
      total += Math.ceil(a.byteLength / 4) * 4;
      return at;
    }));
    const buffer = this.ctx.pool.acquire(STAGING_IN(), total, 'feeds');
    feeds.forEach((arrays, s) => arrays.forEach((a, j) => queue.writeBuffer(buffer, offsets[s][j], a)));
    return { buffer, offsets };
  }

  /** @param {GPUCommandEncoder} encoder @param {{buffer: GPUBuffer, offsets: number[][]}} inputs @param {number} s */
  encodeFeedCopies(encoder, inputs, s) {
    this.feedIds.forEach((id, j) => {
      const slot = this.slotOfNode(id);
      encoder.copyBufferToBuffer(inputs.buffer, inputs.offsets[s][j], slot.buffer, 0, slot.bytes);
    });
  }

  /** All plan steps in one compute pass (dispatches in a pass are ordered by WebGPU). */
  /** @param {GPUCommandEncoder} encoder */
  encodeSteps(encoder) {
    if (!this.commands.length) return;
    const pass = encoder.beginComputePass({ label: 'gpu-lab step' });
    for (const c of this.commands) {
      pass.setPipeline(c.pipeline);
      pass.setBindGroup(0, c.group);
      pass.dispatchWorkgroups(c.dispatch[0] ?? 1, c.dispatch[1] ?? 1, c.dispatch[2] ?? 1);
    }
    pass.end();
  }

  /**
   * Copy carried outputs into their inputs. A source that is itself a carry target (a swap)
   * is copied through a scratch buffer first so every input gets the pre-step value.
   * @param {GPUCommandEncoder} encoder
   */
  encodeCarry(encoder) {
    if (!this.carry.size) return;
    const pairs = [...this.carry].map(([input, output]) => [this.slotOfNode(output), this.slotOfNode(input)]);
    const targets = new Set(pairs.map(([, dst]) => dst.buffer));
    const scratch = pairs.map(([src]) => (targets.has(src.buffer) ? this.scratchFor(src) : null));
    pairs.forEach(([src], i) => {
      const tmp = scratch[i];
      if (tmp) encoder.copyBufferToBuffer(src.buffer, 0, tmp, 0, src.bytes);
    });
    pairs.forEach(([src, dst], i) => {
      const from = scratch[i] || src.buffer;
      if (from !== dst.buffer) encoder.copyBufferToBuffer(from, 0, dst.buffer, 0, src.bytes);
    });
  }

  /** A program-owned scratch buffer for one carry source (kept until dispose). @param {Slot} src */
  scratchFor(src) {
    this.scratch ??= new Map();
    let buf = this.scratch.get(src.buffer);
    if (!buf) {
      buf = this.ctx.pool.acquire(STORAGE(), src.bytes, 'carry scratch');
      this.owned.push(buf);
      this.scratch.set(src.buffer, buf);
    }
    return buf;
  }

  /**
   * Copy the read slots into one mappable staging buffer.
   * @param {GPUCommandEncoder} encoder @param {Slot[]} reads
   */
  encodeReads(encoder, reads) {
    if (!reads.length) return null;
    let total = 0;
    const offsets = reads.map((slot) => {
      const at = total;
      total += slot.bytes;
      return at;
    });
    const buffer = this.ctx.pool.acquire(STAGING_OUT(), total, 'read-back');
    reads.forEach((slot, i) => encoder.copyBufferToBuffer(slot.buffer, 0, buffer, offsets[i], slot.bytes));
    return { buffer, offsets, total };
  }

  /**
   * Map the staging buffer (racing device loss) and copy each tensor out.
   * @param {{buffer: GPUBuffer, offsets: number[], total: number} | null} staging
   * @param {number[]} ids @param {Slot[]} reads @param {string} what
   */
  async readBack(staging, ids, reads, what) {
    /** @type {Map<number, Float32Array>} */
    const out = new Map();
    if (!staging) {
      // Nothing to read: still wait for the work so errors and loss surface in this call.
      await this.ctx.gpu.race(this.ctx.gpu.device.queue.onSubmittedWorkDone(), what);
      return out;
    }
    const { gpu, pool } = this.ctx;
    try {
      await gpu.race(staging.buffer.mapAsync(GPUMapMode.READ, 0, staging.total), `${what} (reading results)`);
    } catch (err) {
      // The buffer may be half-way through a failed map; do not return it to the pool.
      pool.destroy(staging.buffer);
      throw err;
    }
    const bytes = staging.buffer.getMappedRange(0, staging.total);
    ids.forEach((id, i) => {
      out.set(id, new Float32Array(bytes.slice(staging.offsets[i], staging.offsets[i] + reads[i].bytes)));
    });
    staging.buffer.unmap();
    pool.release(staging.buffer);
    return out;
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    if (!this.ctx.gpu.disposed) for (const buf of this.owned) this.ctx.pool.release(buf);
    this.owned = [];
    this.slots.clear();
    this.commands = [];
  }
}

/**
 * node id -> plan buffer id, from the plan's `values` (views share their operand's buffer).
 * @param {Plan} plan
 */
export function nodeBuffers(plan) {
  return new Map((plan.values || []).map((v) => [v.node, v.buffer]));
}

/** @param {{nodes: Array<{id: number}>}} checked */
function nodeMap(checked) {
  return new Map(checked.nodes.map((n) => [n.id, n]));
}

/**
 * The values an upload writes: an input's data or a `full` node's value.
 * @param {{op: string, shape: number[], data?: Float32Array, attrs?: Record<string, unknown>}} node
 * @returns {Float32Array | null}
 */
function uploadData(node) {
  if (node.data) return node.data instanceof Float32Array ? node.data : Float32Array.from(node.data);
  if (node.op === 'full') {
    const n = node.shape.reduce((a, d) => a * d, 1);
    return new Float32Array(n).fill(toNumber(node.attrs?.value));
  }
  return null; // a fed input: written per step
}

/** @param {unknown} v a number or "nan"/"inf"/"-inf" */
function toNumber(v) {
  if (typeof v === 'number') return v;
  if (v === 'nan') return NaN;
  if (v === 'inf') return Infinity;
  if (v === '-inf') return -Infinity;
  return Number(v);
}

/**
 * Every step's uniform (packed by the planner's `packParams`, so both executors agree on the
 * bytes) in one buffer, each at an `align`-byte offset.
 * @param {PlanStep[]} steps @param {number} align
 * @param {(params: Array<[string, number]>) => Uint8Array} packOne
 */
export function packUniforms(steps, align, packOne) {
  const each = steps.map((s) => packOne(/** @type {Array<[string, number]>} */ (s.params || [])));
  const offsets = [];
  let total = 0;
  for (const bytes of each) {
    offsets.push(total);
    total += Math.ceil(bytes.byteLength / align) * align;
  }
  const bytes = new Uint8Array(total);
  each.forEach((b, i) => bytes.set(b, offsets[i]));
  return { bytes, offsets, sizes: each.map((b) => b.byteLength) };
}
