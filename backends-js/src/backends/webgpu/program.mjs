// A prepared graph on the WebGPU device: the plan's buffers, uploads, uniforms and bind groups,
// built once; `run(steps)` encodes every session step's dispatches in one compute pass each.
// On a hardware adapter each step is submitted once encoded (the GPU runs it while the host
// encodes the next; its feeds written just before), on a software one (the "GPU" is the same
// cores) all steps go in ONE submit with feeds staged and copied in before each step, as the
// native executor does (docs/benchmarks.md "Interleaved A/B rounds"). Carries that pair up
// ping-pong between two recordings of the bind groups (pingpong.mjs), else carried outputs are
// copied back after each step. hooks.stepsPerSubmit (0: all in one) and hooks.carryCopies
// (true: never ping-pong) choose the other path, for A/B measurements (bench/dawn/mlp.mjs --ab);
// hooks.feedPairs gives each fed input a second buffer in the swapped recording, so two steps
// of one submission both have their feeds written straight in (stepsPerSubmit 2, no copies).

import { GpuLabError } from '../../errors.mjs';
import { toDeviceWords } from '../../dtypes.mjs';
import { indexError } from '../../values.mjs';
import { nodeBuffers, packUniforms, uploadData } from './plan-data.mjs';
import { DEFAULT_DEADLINE_MS, withinDeadline } from './deadline.mjs';
import { budgetMessage } from './student.mjs';
import {
  CHUNK_UNIFORM_BYTES, chunkAxis, chunkWords, nextChunk,
} from './student-chunks.mjs';
import { planSwap } from './pingpong.mjs';
import {
  STORAGE, copyCarries, copyFeeds, encodeReads, readBack, stageFeeds, writeFeeds,
} from './transfer.mjs';

const UNIFORM = () => GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
/**
 * A run part's feeds staging buffer stays at most this big (and within maxBufferSize):
 * SwiftShader cannot allocate a buffer of exactly its maxBufferSize (256 MiB), so 16 steps of
 * 64 MiB feeds, split into parts of 4, poisoned the session; parts of 64 MiB cost one submission
 * per 64 MiB of feeds.
 */
export const MAX_STAGING_BYTES = 64 * 1024 * 1024;

/**
 * @typedef {import('./plan-data.mjs').Plan} Plan
 * @typedef {import('./plan-data.mjs').CheckedNode} CheckedNode
 * @typedef {import('./transfer.mjs').Slot} Slot
 * @typedef {import('./kernels.mjs').Kernel} Kernel
 * @typedef {{gpu: import('./device.mjs').GpuDevice, pool: import('./pool.mjs').BufferPool,
 *   kernels: import('./kernels.mjs').PipelineCache, counters: {submits: number},
 *   software?: boolean,
 *   hooks: {onSubmit?: () => void, stepsPerSubmit?: number, carryCopies?: boolean,
 *     feedPairs?: boolean},
 *   packParams: (params: Array<[string, number]>) => Uint8Array}} Context
 * @typedef {{uniform: GPUBuffer, workgroupSize: number[], count: number}} ChunkState a student
 *   step run in chunks (student-chunks.mjs): its chunk uniform and the workgroups of its next
 *   chunk, learnt from the last one's time
 * @typedef {{pipeline: GPUComputePipeline, group: GPUBindGroup, dispatch: number[],
 *   chunk?: ChunkState}} Command
 */

/**
 * A slot for `elements` float32 values. Bindings cover exactly the plan's `4 * elements` bytes,
 * never the pooled buffer's larger size (docs/plan.md), so `arrayLength` in a kernel agrees
 * with the native executor.
 * @param {GPUBuffer} buffer @param {number} elements @returns {Slot}
 */
function makeSlot(buffer, elements) {
  return { buffer, bytes: elements * 4 };
}

export class WebGpuProgram {
  /**
   * @param {Context} ctx
   * @param {Plan} plan
   * @param {{nodes: CheckedNode[]}} checked
   * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} session
   *   keep is not needed here: every buffer of a program stays on the device until dispose.
   */
  constructor(ctx, plan, checked, { feeds = [], carry = new Map() } = {}) {
    this.ctx = ctx;
    this.plan = plan;
    /** @type {Map<number, CheckedNode>} */
    this.byId = new Map(checked.nodes.map((n) => [n.id, n]));
    /** Each node's dtype, for read-back (a node without one predates dtypes: float32). */
    this.dtypeOf = (/** @type {number} */ id) => this.byId.get(id)?.dtype ?? 'float32';
    /** @type {Map<number, number>} node id -> buffer id (plan ids; negative: added here) */
    this.nodeBuffer = nodeBuffers(plan);
    // Inputs no output depends on have no plan buffer: feeding them changes nothing, but a
    // carried one still holds state that download() may read, so it gets a buffer here.
    this.feedIds = feeds.filter((id) => this.nodeBuffer.has(id));
    /** @type {Map<number, number>} carried input id -> output id */
    this.carry = carry instanceof Map ? carry : new Map();
    this.extraInputs = [...this.carry.keys()].filter((id) => !this.nodeBuffer.has(id));
    this.extraInputs.forEach((id, i) => this.nodeBuffer.set(id, -1 - i));
    /** @type {Map<number, Slot>} buffer id -> slot */
    this.slots = new Map();
    /** @type {GPUBuffer[]} every pooled buffer this program holds (returned on dispose) */
    this.owned = [];
    /** @type {Command[][]} the dispatches: [plain] or, ping-ponging, [plain, swapped] */
    this.recorded = [];
    /** @type {Map<number, number>} plan buffer -> its ping-pong partner (empty: copies) */
    this.swap = new Map();
    /** @type {Set<number>} buffers of carried inputs (the swap's input side) */
    this.carriedInputs = new Set();
    this.parity = 0; // 1: the next step runs the swapped recording
    this.stepsEncoded = 0;
    const hooks = ctx.hooks ?? {};
    this.carryCopies = Boolean(hooks.carryCopies);
    this.feedPairs = Boolean(hooks.feedPairs);
    this.carriesSwap = false; // the carries ping-pong (else they are copied)
    /** steps per submission of a multi-step run; 0: all in one */
    this.stepsPerSubmit = Number.isInteger(hooks.stepsPerSubmit) && hooks.stepsPerSubmit >= 0
      ? hooks.stepsPerSubmit : (ctx.software ? 0 : 1);
    /** @type {Map<GPUBuffer, GPUBuffer>} carry source -> its scratch copy */
    this.scratch = new Map();
    /** @type {Map<number, Slot>} student node -> its loop-budget flag word (wgsl-budget.mjs) */
    this.flags = new Map();
    /** @type {Slot[][]} per recording: students' result slots, cleared before each step */
    this.studentClears = [];
    /** @type {Slot[]} pooled value slots nothing writes at init, cleared before the first step */
    this.pendingClears = [];
    this.chunked = false; // a student step runs in chunks (software adapters: student-chunks.mjs)
    this.disposed = false;
  }

  /** Build pipelines, allocate and upload; throws BACKEND or LIMIT before any run. */
  async init() {
    const { gpu, kernels } = this.ctx;
    this.checkSizes();
    // a "wgsl" step is a student's kernel: its node's own source (student.mjs)
    const pipelines = await Promise.all(this.plan.steps.map((s) => (s.kernel === 'wgsl'
      ? this.ctx.student.get(this.node(/** @type {number} */ (s.node))) : kernels.get(s))));
    await gpu.guard('allocating and uploading the plan', () => {
      this.allocate();
      this.upload();
      this.resetChecks();
      this.swap = this.carryCopies ? new Map() : this.planSwap();
      this.carriesSwap = this.swap.size > 0;
      if (this.feedPairs) this.pairFeeds();
      this.recorded = this.bindSteps(pipelines);
    });
  }

  /** LIMIT for a tensor past the device's sizes (the planner refuses them first). */
  checkSizes() {
    const max = this.ctx.gpu.limits().maxStorageBufferBindingSize;
    for (const b of this.plan.buffers) {
      if (b.elements * 4 > max) {
        throw new GpuLabError('LIMIT', `node ${b.node}: a ${b.elements * 4}-byte buffer is ` +
          `past this WebGPU device's ${max}-byte limit`, b.node ?? null);
      }
    }
  }

  /**
   * The value slots. WebGPU's rule, made the pool's: every buffer a program can read starts
   * zeroed. A new buffer is; one that came back from the pool still holds its last program's
   * values (a student's kernel that writes nothing read a disposed session's data), so those
   * nothing writes at init are cleared at the start of the first step encoded: in the run's
   * own submission, before any dispatch reads them (native: program.py, the same rule).
   */
  allocate() {
    const { pool } = this.ctx;
    /** @type {number[]} */
    const reused = [];
    const add = (/** @type {number} */ id, /** @type {number} */ elements, /** @type {string} */ label) => {
      const before = pool.reused;
      this.slots.set(id, this.newSlot(elements, label));
      if (pool.reused !== before) reused.push(id);
    };
    for (const b of this.plan.buffers) add(b.id, b.elements, `buffer ${b.id}`);
    for (const id of this.extraInputs) {
      add(this.bufferIdOf(id), this.node(id).shape.reduce((a, d) => a * d, 1), `input ${id}`);
    }
    // written before anything reads them: uploads, the check words, and the feeds (written
    // before each step: a clear in the step would wipe the first step's feed)
    const written = new Set((this.plan.uploads || []).map((u) => u.buffer));
    for (const b of this.plan.buffers) if (b.kind === 'check') written.add(b.id);
    for (const id of this.feedIds) written.add(this.bufferIdOf(id));
    for (const id of this.extraInputs) if (this.node(id).data) written.add(this.bufferIdOf(id));
    this.pendingClears = reused.filter((id) => !written.has(id)).map((id) => this.slotOf(id));
  }

  /** @param {number} elements @param {string} label */
  newSlot(elements, label) {
    const buffer = this.ctx.pool.acquire(STORAGE(), Math.max(16, elements * 4), label);
    this.owned.push(buffer);
    return makeSlot(buffer, elements);
  }

  /** Input data and `full` values go up once, at prepare. */
  upload() {
    const queue = this.ctx.gpu.device.queue;
    const ups = [...(this.plan.uploads || [])];
    for (const id of this.extraInputs) ups.push({ buffer: this.bufferIdOf(id), node: id });
    for (const up of ups) {
      const data = uploadData(this.node(up.node));
      if (data) queue.writeBuffer(this.slotOf(up.buffer).buffer, 0, data);
    }
  }

  /** The ping-pong pairs of this program's carries (pingpong.mjs), or none. */
  planSwap() {
    const fed = new Set(this.feedIds.map((id) => this.bufferIdOf(id)));
    const swap = planSwap(this.plan, this.carry, (n) => this.nodeBuffer.get(n), fed,
      (b) => this.slotOf(b).bytes);
    for (const input of this.carry.keys()) {
      const b = this.nodeBuffer.get(input);
      if (b !== undefined && swap.has(b)) this.carriedInputs.add(b);
    }
    return swap;
  }

  /** hooks.feedPairs: each fed input's buffer swaps with a second one of its size. */
  pairFeeds() {
    this.feedIds.forEach((id, j) => {
      const b = this.bufferIdOf(id);
      const pair = -1 - this.extraInputs.length - j;
      this.slots.set(pair, this.newSlot(this.slotOf(b).bytes / 4, `input ${id} (pair)`));
      this.swap.set(b, pair);
      this.swap.set(pair, b);
    });
  }

  /** The fed inputs' slots as a step of `parity` reads them. @param {number} parity */
  feedSlotsAt(parity) {
    return this.feedIds.map((id) => {
      const b = this.bufferIdOf(id);
      const pair = this.swap.get(b);
      return this.slotOf(parity && pair !== undefined ? pair : b);
    });
  }

  /**
   * One uniform buffer holds every step's params at aligned offsets; one bind group per step
   * (and per recording: a second, swapped one when carries ping-pong).
   * @param {Kernel[]} pipelines @returns {Command[][]}
   */
  bindSteps(pipelines) {
    const device = this.ctx.gpu.device;
    const align = device.limits.minUniformBufferOffsetAlignment || 256;
    const packed = packUniforms(this.plan.steps, align, this.ctx.packParams);
    /** @type {GPUBuffer | null} */
    let uniform = null;
    if (packed.bytes.byteLength) {
      uniform = this.ctx.pool.acquire(UNIFORM(), packed.bytes.byteLength, 'params');
      this.owned.push(uniform);
      device.queue.writeBuffer(uniform, 0, packed.bytes);
    }
    /** @type {Map<number, ChunkState>} step index -> its chunks' state (both recordings') */
    const chunks = new Map();
    pipelines.forEach((k, i) => {
      if (!k.chunk) return;
      const buffer = this.ctx.pool.acquire(UNIFORM(), CHUNK_UNIFORM_BYTES, 'chunk');
      this.owned.push(buffer);
      chunks.set(i, { uniform: buffer, workgroupSize: k.chunk.workgroupSize, count: 1 });
    });
    this.chunked = chunks.size > 0;
    const record = (/** @type {boolean} */ swapped) => this.plan.steps.map((step, i) => {
      const k = pipelines[i];
      // our kernels: the uniform at 0, storage from 1; a student's: storage from 0, then it
      const first = k.firstStorage ?? 1;
      /** @type {GPUBindGroupEntry[]} */
      const entries = [];
      if (k.uniform && uniform) {
        const resource = { buffer: uniform, offset: packed.offsets[i], size: packed.sizes[i] };
        entries.push({ binding: k.uniformBinding ?? 0, resource });
      }
      step.bindings.forEach((id, j) => {
        const slot = this.slotOf(id);
        const buffer = swapped ? this.slotOf(this.swap.get(id) ?? id).buffer : slot.buffer;
        const resource = { buffer, offset: 0, size: slot.bytes };
        entries.push({ binding: j + first, resource });
      });
      if (k.budgetBinding != null) {
        const flag = this.budgetFlag(/** @type {number} */ (step.node));
        entries.push({ binding: k.budgetBinding, resource: { buffer: flag.buffer, offset: 0, size: 4 } });
      }
      const chunk = chunks.get(i);
      if (chunk) {
        const resource = { buffer: chunk.uniform, offset: 0, size: CHUNK_UNIFORM_BYTES };
        entries.push({ binding: k.chunk.binding, resource });
      }
      const group = device.createBindGroup({ layout: k.layout, entries, label: step.kernel });
      return { pipeline: k.pipeline, group, dispatch: step.dispatch, chunk };
    });
    const clears = (/** @type {boolean} */ swapped) => this.plan.steps.flatMap((step) => {
      if (step.kernel !== 'wgsl') return [];
      return step.bindings.slice(-(step.writes ?? 1)).map((id) => {
        const slot = this.slotOf(id);
        return swapped ? { buffer: this.slotOf(this.swap.get(id) ?? id).buffer, bytes: slot.bytes } : slot;
      });
    });
    // A student's kernel may write only some of its results, or nothing: each step clears them
    // first, so what it does not write reads zeros, never the session's last step (N session
    // steps equal N chained executes). Our kernels write every element.
    this.studentClears = this.swap.size ? [clears(false), clears(true)] : [clears(false)];
    return this.swap.size ? [record(false), record(true)] : [record(false)];
  }

  /**
   * The loop-budget flag word of a student's step, zeroed once: a run that sets it fails and
   * poisons the session, so it is never reset. @param {number} nodeId
   */
  budgetFlag(nodeId) {
    let slot = this.flags.get(nodeId);
    if (!slot) {
      slot = this.newSlot(4, `loop budget of node ${nodeId}`);
      this.ctx.gpu.device.queue.writeBuffer(slot.buffer, 0, new Uint32Array(4));
      this.flags.set(nodeId, slot);
    }
    return slot;
  }

  /** BACKEND naming the loop budget when a student's loop passed it during this run. */
  async readBudgetFlags() {
    if (!this.flags.size) return;
    const { gpu, pool } = this.ctx;
    const ids = [...this.flags.keys()];
    const slots = [...this.flags.values()];
    const staging = await gpu.guard('run (loop budget)', () => {
      const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab loop budget' });
      const out = encodeReads(encoder, pool, slots);
      this.submit(encoder);
      return out;
    });
    const words = await readBack(gpu, pool, staging, ids, slots, 'run (loop budget)', () => 'uint32');
    for (const id of ids) {
      if (/** @type {Uint32Array} */ (words.get(id))[0]) {
        throw new GpuLabError('BACKEND', budgetMessage(id), id);
      }
    }
  }

  /** @param {number} id */
  node(id) {
    const node = this.byId.get(id);
    if (!node) throw new GpuLabError('BACKEND', `the plan names node ${id}, which the graph lacks`);
    return node;
  }

  /** @param {number} id buffer id */
  slotOf(id) {
    const slot = this.slots.get(id);
    if (!slot) throw new GpuLabError('BACKEND', `the plan uses buffer ${id} but does not list it`);
    return slot;
  }

  /** @param {number} nodeId */
  bufferIdOf(nodeId) {
    const id = this.nodeBuffer.get(nodeId);
    if (id === undefined) {
      throw new GpuLabError('BACKEND', `node ${nodeId} has no buffer (no output needs it)`, nodeId);
    }
    return id;
  }

  /**
   * Where a node's value is now: a carried input's as the next step will read it, any other
   * node's as the last step left it (ping-pong moves them between two buffers).
   * @param {number} nodeId
   */
  slotOfNode(nodeId) {
    return this.slotOf(this.physical(this.bufferIdOf(nodeId), false));
  }

  /**
   * The buffer holding plan buffer `id`'s value, given the steps encoded so far. `used`: a
   * carried input's value as the last step read it (what a run reads back for an output
   * that is a carried input, as the copy path does), else as the next step will read it.
   * @param {number} id @param {boolean} used
   */
  physical(id, used) {
    const partner = this.swap.get(id);
    if (partner === undefined || this.stepsEncoded === 0) return id;
    const next = this.carriedInputs.has(id) && !used;
    return (next ? this.parity : 1 - this.parity) ? partner : id;
  }

  checkLive() {
    if (this.disposed) throw new GpuLabError('DISPOSED', 'this WebGPU program was disposed');
    this.ctx.gpu.check();
  }

  /**
   * Run the session steps and read back `readIds` after the last one: in one submission when
   * every step's feeds fit one staging buffer, else in parts that do (a hostile feed list: 17
   * steps of 64 MiB feeds overflowed maxBufferSize and poisoned the session); carries persist
   * between parts and only the last part reads back, so the result is the same.
   * @param {Array<Map<number, Float32Array>>} steps one feed map per session step
   * @param {number[]} readIds node ids (outputs or carried inputs)
   * @returns {Promise<Map<number, Float32Array>>}
   */
  async run(steps, readIds = []) {
    this.checkLive();
    const per = this.maxStepsPerRun();
    if (steps.length <= per) return this.runPart(steps, readIds, 0);
    const rest = steps.length % per || per;
    for (let start = 0; start < steps.length - rest; start += per) {
      await this.runPart(steps.slice(start, start + per), [], start);
      this.checkLive();
    }
    return this.runPart(steps.slice(steps.length - rest), readIds, steps.length - rest);
  }

  /** How many steps' feeds fit one staging buffer (MAX_STAGING_BYTES, the pool's maxBufferSize). */
  maxStepsPerRun() {
    const perStep = this.feedIds.reduce((sum, id) => sum + this.slotOfNode(id).bytes, 0);
    const staging = Math.min(this.ctx.pool.maxBufferSize, MAX_STAGING_BYTES);
    return perStep ? Math.max(1, Math.floor(staging / perStep)) : Infinity;
  }

  /**
   * Steps of one run part (`first`: the index of steps[0] in the whole run, for messages): a
   * submission every stepsPerSubmit steps (0: one for all), the read-back after the last.
   * @param {Array<Map<number, Float32Array>>} steps @param {number[]} readIds
   * @param {number} first @returns {Promise<Map<number, Float32Array>>}
   */
  async runPart(steps, readIds, first) {
    const feeds = steps.map((s, i) => this.feedArrays(s, first + i));
    const carries = this.carriesSwap ? [] : [...this.carry].map(([input, output]) =>
      /** @type {[Slot, Slot]} */ ([this.slotOfNode(output), this.slotOfNode(input)]));
    if (this.chunked) return this.runChunkedPart(feeds, readIds, carries);
    const { gpu, pool } = this.ctx;
    const every = this.stepsPerSubmit;
    // a submission per step (or per two with feed pairs): each step's feeds are written
    // straight into the buffers it reads, before its submission (queue order)
    const direct = feeds.length > 1 && (every === 1 || (this.feedPairs && every === 2));
    /** @type {Slot[]} */
    let reads = [];
    /** @type {import('./transfer.mjs').Staging | null} */
    let staging = null;
    /** @type {import('./transfer.mjs').StagedFeeds | null} */
    let staged = null;
    try {
      await gpu.guard('run', () => {
        const queue = gpu.device.queue;
        staged = direct ? null : stageFeeds(queue, pool, this.feedSlotsAt(this.parity), feeds);
        /** @type {GPUCommandEncoder | null} */
        let encoder = null;
        const last = feeds.length - 1;
        for (let s = 0; s <= last; s++) {
          const feedSlots = this.feedSlotsAt(this.parity);
          if (direct) writeFeeds(queue, feedSlots, feeds[s]);
          encoder ??= gpu.device.createCommandEncoder({ label: 'gpu-lab run' });
          if (staged) copyFeeds(encoder, staged, feedSlots, s);
          this.encodeSteps(encoder);
          // outputs are the last step's values, read before its carry moves them (an output
          // that is a carried input keeps the value that step used, as on every backend)
          if (s === last) {
            reads = readIds.map((id) => this.slotOf(this.physical(this.bufferIdOf(id), true)));
            staging = encodeReads(encoder, pool, reads);
          }
          if (carries.length) copyCarries(encoder, carries, (src) => this.scratchFor(src));
          if (s === last || (every && (s + 1) % every === 0)) {
            this.submit(encoder);
            encoder = null;
          }
        }
      });
      await withinDeadline(gpu, this.deadlineMs(), 'run');
    } catch (err) {
      if (staging) pool.release(/** @type {{buffer: GPUBuffer}} */ (staging).buffer);
      throw err;
    } finally {
      // Queue order: whoever reuses the feed staging buffer writes after this submission.
      if (staged) pool.release(/** @type {{buffer: GPUBuffer}} */ (staged).buffer);
    }
    return this.finishRun(staging, readIds, reads);
  }

  /**
   * The read-back of a run and its checks (loop budget, index checks).
   * @param {import('./transfer.mjs').Staging | null} staging @param {number[]} readIds
   * @param {Slot[]} reads
   */
  async finishRun(staging, readIds, reads) {
    const { gpu, pool } = this.ctx;
    const values = await readBack(gpu, pool, staging, readIds, reads, 'run', this.dtypeOf);
    await this.readBudgetFlags();
    if (this.plan.checks) await this.readChecks();
    return values;
  }

  /**
   * Steps of one run part on a software adapter whose program runs a student's kernel in
   * chunks: each step's dispatches before a chunked one go in one submission, the chunked
   * dispatch in submissions of a few workgroups (the run's deadline checked after each), the
   * rest with the read-back and carries in one more. Feeds are written straight into the
   * buffers each step reads (queue order puts them after the last step's submissions).
   * @param {Uint32Array[][]} feeds @param {number[]} readIds @param {Array<[Slot, Slot]>} carries
   * @returns {Promise<Map<number, Float32Array>>}
   */
  async runChunkedPart(feeds, readIds, carries) {
    const { gpu, pool } = this.ctx;
    const clock = { since: performance.now(), ms: this.deadlineMs() };
    /** @type {Slot[]} */
    let reads = [];
    /** @type {import('./transfer.mjs').Staging | null} */
    let staging = null;
    try {
      const last = feeds.length - 1;
      for (let s = 0; s <= last; s++) {
        await gpu.guard('run', () => writeFeeds(gpu.device.queue, this.feedSlotsAt(this.parity), feeds[s]));
        const { clears, commands } = this.nextStep();
        /** @type {Command[]} */
        let pending = [];
        const flush = (/** @type {boolean} */ final) => gpu.guard('run', () => {
          const ends = final && (s === last || carries.length > 0); // read-back or carries
          if (!ends && !clears.length && !pending.length) return; // nothing to submit
          const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab run' });
          for (const slot of clears.splice(0)) encoder.clearBuffer(slot.buffer, 0, slot.bytes);
          this.encodePass(encoder, pending);
          pending = [];
          if (ends && s === last) {
            reads = readIds.map((id) => this.slotOf(this.physical(this.bufferIdOf(id), true)));
            staging = encodeReads(encoder, pool, reads);
          }
          if (ends && carries.length) copyCarries(encoder, carries, (src) => this.scratchFor(src));
          this.submit(encoder);
        });
        for (const c of commands) {
          if (!c.chunk) {
            pending.push(c);
            continue;
          }
          await flush(false); // what comes before, and the step's clears
          await this.dispatchInChunks(c, clock);
        }
        await flush(true);
      }
      await withinDeadline(gpu, clock.ms, 'run', clock.since);
    } catch (err) {
      if (staging) pool.release(/** @type {{buffer: GPUBuffer}} */ (staging).buffer);
      throw err;
    }
    return this.finishRun(staging, readIds, reads);
  }

  /**
   * A student's dispatch in submissions of `chunk.count` workgroups along its axis, each waited
   * for within the run's deadline, so that past it at most one chunk is left running on the
   * adapter. The count doubles while a chunk takes well under CHUNK_TARGET_MS.
   * @param {Command} c @param {{since: number, ms: number|null}} clock
   */
  async dispatchInChunks(c, clock) {
    const { gpu } = this.ctx;
    const chunk = /** @type {ChunkState} */ (c.chunk);
    const whole = [c.dispatch[0] ?? 1, c.dispatch[1] ?? 1, c.dispatch[2] ?? 1];
    const axis = chunkAxis(whole);
    for (let start = 0; start < whole[axis];) {
      const count = Math.min(chunk.count, whole[axis] - start);
      const began = performance.now();
      await gpu.guard('run', () => {
        gpu.device.queue.writeBuffer(chunk.uniform, 0, chunkWords(whole, chunk.workgroupSize, axis, start));
        const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab run (chunk)' });
        const pass = encoder.beginComputePass({ label: 'gpu-lab chunk' });
        pass.setPipeline(c.pipeline);
        pass.setBindGroup(0, c.group);
        const size = [...whole];
        size[axis] = count;
        pass.dispatchWorkgroups(size[0], size[1], size[2]);
        pass.end();
        this.submit(encoder);
      });
      if (clock.ms === null) await gpu.race(gpu.device.queue.onSubmittedWorkDone(), 'run');
      else await withinDeadline(gpu, clock.ms, 'run', clock.since);
      if (count === chunk.count) chunk.count = nextChunk(count, performance.now() - began);
      start += count;
    }
  }

  /**
   * The index ops' check words (kernels/wgsl/index.wgsl): each the smallest position in idx of
   * an index out of range during this run (0xffffffff: none). Any other word is BACKEND
   * naming the node and the position (the session is then poisoned: STATE). Reset after.
   */
  async readChecks() {
    const { gpu, pool } = this.ctx;
    const slot = this.slotOf(this.plan.buffers.find((b) => b.kind === 'check').id);
    const staging = await gpu.guard('run (index checks)', () => {
      const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab index checks' });
      const out = encodeReads(encoder, pool, [slot]);
      this.submit(encoder);
      return out;
    });
    const words = /** @type {Uint32Array} */ ((await readBack(gpu, pool, staging, [0], [slot],
      'run (index checks)', () => 'uint32')).get(0));
    this.resetChecks();
    for (const { node, word } of this.plan.checks) {
      if (words[word] !== 0xffffffff) {
        const n = this.node(node);
        throw indexError('BACKEND', n, this.node(n.operands[0]).shape, words[word]);
      }
    }
  }

  /** Every check word to 0xffffffff ("no index out of range"). */
  resetChecks() {
    const b = this.plan.buffers.find((x) => x.kind === 'check');
    if (b) this.ctx.gpu.device.queue.writeBuffer(this.slotOf(b.id).buffer, 0, new Uint32Array(b.elements).fill(0xffffffff));
  }

  /**
   * The current value of a kept output or a carried input.
   * @param {number} id node id
   */
  async download(id) {
    this.checkLive();
    const reads = [this.slotOfNode(id)];
    const { gpu, pool } = this.ctx;
    const staging = await gpu.guard('download', () => {
      const encoder = gpu.device.createCommandEncoder({ label: 'gpu-lab download' });
      const out = encodeReads(encoder, pool, reads);
      this.submit(encoder);
      return out;
    });
    await withinDeadline(gpu, this.deadlineMs(), 'download');
    const values = await readBack(gpu, pool, staging, [id], reads, 'download', this.dtypeOf);
    return /** @type {import('../../dtypes.mjs').TypedData} */ (values.get(id));
  }

  /** The deadline of this program's submissions: the option, else 2 s with a student kernel. */
  deadlineMs() {
    const student = this.plan.steps.some((s) => s.kernel === 'wgsl');
    return this.ctx.deadlineMs ?? (student ? DEFAULT_DEADLINE_MS : null);
  }

  /** @param {GPUCommandEncoder} encoder */
  submit(encoder) {
    this.ctx.gpu.device.queue.submit([encoder.finish()]);
    this.ctx.counters.submits += 1;
    this.ctx.hooks.onSubmit?.();
  }

  /**
   * One session step's feeds, in feed order, checked against the input sizes.
   * @param {Map<number, Float32Array>} step @param {number} index
   */
  feedArrays(step, index) {
    return this.feedIds.map((id) => {
      const value = step.get(id);
      if (value === undefined) {
        throw new GpuLabError('VALIDATION', `step ${index}: no value fed for input node ${id}`, id);
      }
      // the session checked the value against the input's dtype: upload its 32-bit words
      const data = toDeviceWords(ArrayBuffer.isView(value) ? value : Float32Array.from(value),
        this.dtypeOf(id));
      const bytes = this.slotOfNode(id).bytes;
      if (data.byteLength !== bytes) {
        throw new GpuLabError('VALIDATION', `step ${index}: input node ${id} needs ` +
          `${bytes / 4} values, got ${data.length}`, id);
      }
      return data;
    });
  }

  /**
   * Every dispatch of one graph step in one compute pass: WebGPU orders storage writes between
   * dispatches of a pass, so no extra barriers are needed.
   * @param {GPUCommandEncoder} encoder
   */
  encodeSteps(encoder) {
    const { clears, commands } = this.nextStep();
    for (const slot of clears) encoder.clearBuffer(slot.buffer, 0, slot.bytes);
    this.encodePass(encoder, commands);
  }

  /**
   * The next session step's dispatches and the slots to clear before them; the step counts as
   * encoded (ping-pong's parity moves on).
   */
  nextStep() {
    const commands = this.recorded[this.parity] ?? [];
    const clears = [...this.pendingClears, ...(this.studentClears[this.parity] ?? [])];
    this.pendingClears = [];
    this.stepsEncoded += 1;
    if (this.swap.size) this.parity = 1 - this.parity;
    return { clears, commands };
  }

  /** Dispatches in one compute pass. @param {GPUCommandEncoder} encoder @param {Command[]} commands */
  encodePass(encoder, commands) {
    if (!commands.length) return;
    const pass = encoder.beginComputePass({ label: 'gpu-lab step' });
    /** @type {GPUComputePipeline | null} */
    let current = null;
    for (const c of commands) {
      if (c.pipeline !== current) pass.setPipeline(c.pipeline);
      current = c.pipeline;
      pass.setBindGroup(0, c.group);
      pass.dispatchWorkgroups(c.dispatch[0] ?? 1, c.dispatch[1] ?? 1, c.dispatch[2] ?? 1);
    }
    pass.end();
  }

  /** A program-owned scratch buffer for one carry source (kept until dispose). @param {Slot} src */
  scratchFor(src) {
    let buf = this.scratch.get(src.buffer);
    if (!buf) {
      buf = this.ctx.pool.acquire(STORAGE(), src.bytes, 'carry scratch');
      this.owned.push(buf);
      this.scratch.set(src.buffer, buf);
    }
    return buf;
  }

  /** Return every buffer to the pool (reused by the next program: queue order keeps it safe). */
  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    if (!this.ctx.gpu.disposed) for (const buf of this.owned) this.ctx.pool.release(buf);
    this.owned = [];
    this.slots.clear();
    this.recorded = [];
    this.scratch.clear();
    this.flags.clear();
  }
}
