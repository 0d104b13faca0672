// A prepared graph on the wasm backend: every node gets a slot (an index into a table of
// pointers into linear memory), kernels are planned once, and run() replays the steps.
//
// Memory plan: inputs, outputs, kept and carried values, and `full` constants own their
// blocks; intermediates share blocks once their last reader has run (liveness), which keeps
// the working set small and in cache. A transpose read only by matmuls is not materialized:
// the matmul reads its source through swapped strides (same products, same order, same bits).
//
// Carry: after each step the carried input must hold the output's value. When the output is
// computed every step (not an input or a `full` constant) and carried into one input only, the
// two slots swap pointers (no copy); otherwise the value is copied. After a swap the output's latest value lives in the
// input's block, which `locate` accounts for.
import { GpuLabError, asBackendError, nodeLabel } from '../../errors.mjs';
import { numel, stridesOf } from '../../shapes.mjs';
import { BACKEND, getKernel } from './registry.mjs';
import { unsupportedError } from '../../kernels.mjs';
import { blockOf, fromDeviceWords, storedLength, toDeviceWords } from '../../dtypes.mjs';
import { createStepGate } from '../../step-gate.mjs';
import './kernels-elementwise.mjs';
import './kernels-tensor.mjs';
import './kernels-select.mjs';
import './kernels-index.mjs';
import './kernels-window.mjs';

/** @typedef {import('../../validate.mjs').CheckedNode} CheckedNode */


export class WasmProgram {
  /**
   * @param {{exports: Record<string, any>, arena: import('./arena.mjs').Arena,
   *   heap: () => Float32Array}} wasm
   * @param {any} checked
   * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} session
   */
  constructor(wasm, checked, { feeds = [], carry = new Map(), keep = [] } = {}) {
    this.wasm = wasm;
    this.checked = checked;
    /** @type {Map<number, CheckedNode>} */
    this.byId = checked.byId ?? new Map(checked.nodes.map((n) => [n.id, n]));
    this.feeds = [...feeds];
    this.carry = new Map(carry);
    /** @type {number[]} blocks owned by this program */
    this.blocks = [];
    /** @type {Map<number, number>} node id -> slot */
    this.slotOf = new Map();
    /** @type {number[]} slot -> byte address, while allocating */
    this.pointers = [];
    this.scratchFloats = 0;
    this.scratch = 0;
    this.ran = false;
    this.disposed = false;
    try {
      this.persistent = this.persistentIds(keep);
      this.fused = this.fusedTransposes();
      this.allocate();
      /** slot -> byte address; carries swap entries */
      this.ptr = Uint32Array.from(this.pointers);
      this.steps = this.plan();
      this.planCarry();
      this.upload();
    } catch (err) {
      this.dispose();
      throw asBackendError(err, 'prepare', { keepAll: true });
    }
  }

  node(/** @type {number} */ id) {
    return /** @type {CheckedNode} */ (this.byId.get(id));
  }

  /** Ids whose values outlive a step: inputs, constants, outputs, kept and carried values. */
  persistentIds(/** @type {number[]} */ keep) {
    const ids = new Set([...this.checked.outputs.map((o) => o.id), ...keep, ...this.feeds]);
    for (const [input, output] of this.carry) {
      const a = this.node(input);
      const b = this.node(output);
      if (!a || a.op !== 'input' || !b) {
        throw new GpuLabError('VALIDATION', `carry ${input} -> ${output}: the target must be an ` +
          'input node and the source an existing node', input);
      }
      if (a.shape.join() !== b.shape.join()) {
        throw new GpuLabError('VALIDATION', `carry into ${nodeLabel(a.id, a.op)}: shape ` +
          `[${a.shape}] differs from ${nodeLabel(b.id, b.op)} [${b.shape}]`, input);
      }
      ids.add(input).add(output);
    }
    for (const id of this.checked.order) {
      const op = this.node(id).op;
      if (op === 'input' || op === 'full') ids.add(id);
    }
    return ids;
  }

  /** Transposes whose every reader is a matmul and whose value is not needed otherwise. */
  fusedTransposes() {
    /** @type {Map<number, string[]>} */
    const readers = new Map();
    for (const id of this.checked.order) {
      for (const src of this.node(id).operands) {
        readers.set(src, [...(readers.get(src) ?? []), this.node(id).op]);
      }
    }
    const fused = new Set();
    for (const id of this.checked.order) {
      const r = readers.get(id) ?? [];
      if (this.node(id).op === 'transpose' && !this.persistent.has(id) && r.length > 0 &&
        r.every((op) => op === 'matmul')) fused.add(id);
    }
    return fused;
  }

  /** The node whose block holds operand values for `id` (a fused transpose reads its source). */
  source(/** @type {number} */ id) {
    return this.fused.has(id) ? this.node(id).operands[0] : id;
  }

  /** Gives every node that runs a slot and a block; intermediates reuse freed blocks. */
  allocate() {
    const order = this.checked.order.filter((id) => !this.fused.has(id));
    const lastUse = new Map();
    order.forEach((id, step) => {
      for (const src of this.node(id).operands) lastUse.set(this.source(src), step);
    });
    /** @type {{at: number, size: number}[]} */
    const pool = [];
    // 32-bit words per element; a q4_k / q6_k input holds its bytes (packed 4 to a word)
    const bytesOf = (/** @type {number} */ id) => {
      const node = this.node(id);
      const words = Math.ceil(storedLength(node.dtype, numel(node.shape)) /
        (blockOf(node.dtype) ? 4 : 1));
      return Math.max(16, words * 4);
    };
    const own = (/** @type {number} */ bytes) => {
      const at = this.wasm.arena.alloc(bytes);
      this.blocks.push(at);
      return at;
    };
    const assign = (/** @type {number} */ id, /** @type {number} */ at) => {
      this.slotOf.set(id, this.pointers.length);
      this.pointers.push(at);
    };
    for (const id of new Set([...this.persistent, ...this.feeds, ...this.carry.keys()])) {
      if (this.byId.has(id) && !this.fused.has(id)) assign(id, own(bytesOf(id)));
    }
    /** @type {Map<number, {at: number, size: number}>} */
    const held = new Map();
    order.forEach((id, step) => {
      if (!this.slotOf.has(id)) {
        const need = bytesOf(id);
        let best = -1;
        pool.forEach((b, i) => {
          if (b.size >= need && (best < 0 || b.size < pool[best].size)) best = i;
        });
        const block = best >= 0 ? pool.splice(best, 1)[0] : { at: own(need), size: need };
        held.set(id, block);
        assign(id, block.at);
      }
      for (const src of new Set(this.node(id).operands.map((o) => this.source(o)))) {
        if (lastUse.get(src) === step && held.has(src)) {
          pool.push(/** @type {{at: number, size: number}} */ (held.get(src)));
          held.delete(src);
        }
      }
    });
  }

  /** Plans every node's kernel; descriptors and scratch are allocated here. */
  plan() {
    const { exports, arena } = this.wasm;
    /** @type {{id: number, run: (p: Uint32Array, s: number) => void}[]} */
    const steps = [];
    /** @type {((p: Uint32Array) => void)[]} */
    this.inits = [];
    for (const id of this.checked.order) {
      if (this.fused.has(id)) continue;
      const node = this.node(id);
      const kernel = getKernel(node.op);
      if (!kernel) {
        // supports() refused such a graph already; a program built without it says the same.
        throw unsupportedError(BACKEND, [{ id, op: node.op, dtype: node.dtype ?? 'float32',
          reason: `no ${node.op} kernel` }]);
      }
      const slot = (/** @type {number} */ i) => /** @type {number} */ (this.slotOf.get(node.operands[i]));
      const shape = (/** @type {number} */ i) => this.node(node.operands[i]).shape;
      const dtype = (/** @type {number} */ i) => this.node(node.operands[i]).dtype ?? 'float32';
      const view = (/** @type {number} */ i) => {
        const src = node.operands[i];
        const s = this.node(src).shape;
        if (!this.fused.has(src)) return { slot: slot(i), shape: s, strides: stridesOf(s) };
        const base = this.node(src).operands[0];
        const st = stridesOf(this.node(base).shape);
        const r = st.length;
        [st[r - 2], st[r - 1]] = [st[r - 1], st[r - 2]];
        return { slot: /** @type {number} */ (this.slotOf.get(base)), shape: s, strides: st };
      };
      const desc = (/** @type {ArrayLike<number>} */ words) => {
        const at = arena.alloc(words.length * 4);
        this.blocks.push(at);
        new Uint32Array(arena.memory.buffer, at, words.length).set(words);
        return at;
      };
      const scratch = (/** @type {number} */ floats) => {
        this.scratchFloats = Math.max(this.scratchFloats, floats);
      };
      const out = /** @type {number} */ (this.slotOf.get(id));
      const planned = kernel({ node, exports, out, operand: slot, view, shape, dtype, desc,
        scratch });
      if (typeof planned === 'function') steps.push({ id, run: planned });
      else if (planned) this.inits.push(planned.init);
    }
    if (this.scratchFloats > 0) {
      this.scratch = arena.alloc(this.scratchFloats * 4);
      this.blocks.push(this.scratch);
    }
    return steps;
  }

  /** Splits carries into pointer swaps and copies (see the header). */
  planCarry() {
    const targets = new Map();
    for (const output of this.carry.values()) targets.set(output, (targets.get(output) ?? 0) + 1);
    // only a value rewritten every step may give its block away (not an input or a `full`)
    const computed = new Set(this.steps.map((step) => step.id));
    /** @type {[number, number][]} slot pairs */
    this.swaps = [];
    /** @type {[number, number, number, number][]} from slot, to slot, floats, staging block */
    this.copies = [];
    /** @type {Map<number, number>} output id -> input id holding its latest value */
    this.swappedInto = new Map();
    for (const [input, output] of this.carry) {
      if (input === output) continue;
      const from = /** @type {number} */ (this.slotOf.get(output));
      const to = /** @type {number} */ (this.slotOf.get(input));
      if (computed.has(output) && targets.get(output) === 1) {
        this.swaps.push([from, to]);
        this.swappedInto.set(output, input);
      } else {
        this.copies.push([from, to, numel(this.node(input).shape), 0]);
      }
    }
    // Staging is needed only when a copy reads a slot that another copy writes.
    const written = new Set(this.copies.map((c) => c[1]));
    this.staged = this.copies.some((c) => written.has(c[0]));
    if (this.staged) {
      for (const c of this.copies) {
        c[3] = this.wasm.arena.alloc(c[2] * 4);
        this.blocks.push(c[3]);
      }
    }
  }

  /** Writes input data and runs once-only kernels (full). */
  upload() {
    for (const [id, slot] of this.slotOf) {
      const node = this.node(id);
      if (node.op === 'input' && node.data) this.write(slot, node.data, node.dtype);
    }
    for (const init of this.inits) init(this.ptr);
  }

  /**
   * After a step: carried inputs take their outputs' values, all at once (a copy whose source
   * is itself a carried input reads the value from before this carry, so two inputs may swap).
   */
  applyCarry() {
    const p = this.ptr;
    const copy = this.wasm.exports.copy;
    if (this.staged) {
      for (const [from, , n, stage] of this.copies) copy(p[from], stage, n);
      for (const [, to, n, stage] of this.copies) copy(stage, p[to], n);
    } else {
      for (const [from, to, n] of this.copies) copy(p[from], p[to], n);
    }
    for (const [from, to] of this.swaps) {
      const t = p[from];
      p[from] = p[to];
      p[to] = t;
    }
  }

  /**
   * Byte address of the value of `id`: during a step (before its carry) every node's own block;
   * between runs, a swapped output's latest value is in the block of the input it was carried to.
   * @param {number} id @param {boolean} betweenRuns
   */
  locate(id, betweenRuns) {
    const holder = betweenRuns && this.ran && this.swappedInto.has(id) ? this.swappedInto.get(id) : id;
    const slot = this.slotOf.get(/** @type {number} */ (holder));
    if (slot === undefined || !this.persistent.has(id)) {
      throw new GpuLabError('VALIDATION', `node ${id} is not an output, kept, fed or carried ` +
        'value of this program, so it is not readable', id);
    }
    return this.ptr[slot];
  }

  /**
   * Runs the steps; `readIds` are read after the last step's kernels and before its carry, so
   * an output that is an input node reads the value that step used.
   * @param {Map<number, Float32Array>[]} steps feed values per step
   * @param {number[]} readIds
   * @returns {Promise<Map<number, Float32Array>>}
   */
  async run(steps, readIds) {
    this.checkLive();
    const s = this.scratch;
    const out = new Map();
    const gate = createStepGate(() => this.disposed); // dispose() stops it between steps
    try {
      for (let i = 0; i < steps.length; i++) {
        for (const [id, data] of steps[i]) {
          const slot = this.slotOf.get(id);
          if (slot === undefined) {
            throw new GpuLabError('VALIDATION', `node ${id} is not a fed input of this program`, id);
          }
          this.write(slot, data, this.node(id).dtype);
        }
        for (const step of this.steps) {
          const wait = gate();
          if (wait) await wait;
          step.run(this.ptr, s);
        }
        if (i === steps.length - 1) for (const id of readIds) out.set(id, this.read(id, false));
        this.applyCarry();
        this.ran = true;
      }
    } catch (err) {
      throw asBackendError(err, 'run', { keepAll: true });
    }
    return out;
  }

  /**
   * Every dtype lives in the heap as 32-bit words (bool as u32 0/1), written and read as bits,
   * so int32/uint32 values and NaN payloads pass through unchanged.
   * @param {number} slot @param {import('../../dtypes.mjs').TypedData} data
   * @param {string} [dtype] a q4_k / q6_k input's bytes are packed 4 to a word
   */
  write(slot, data, dtype) {
    new Uint32Array(this.wasm.heap().buffer).set(toDeviceWords(data, dtype), this.ptr[slot] / 4);
  }

  read(/** @type {number} */ id, /** @type {boolean} */ betweenRuns) {
    const at = this.locate(id, betweenRuns);
    const node = this.node(id);
    return fromDeviceWords(new Uint32Array(this.wasm.heap().buffer, at, numel(node.shape)),
      node.dtype);
  }

  /** @param {number} id */
  async download(id) {
    this.checkLive();
    return this.read(id, true);
  }

  checkLive() {
    if (this.disposed) throw new GpuLabError('DISPOSED', 'wasm program was disposed');
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    for (const at of this.blocks) this.wasm.arena.release(at);
    this.blocks = [];
  }
}
