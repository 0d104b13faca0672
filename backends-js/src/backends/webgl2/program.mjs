// A prepared graph on the WebGL2 backend: every live tensor has a texture slot, every node's
// kernel is recorded once as draw commands over slots, and run() replays them per step.
// Carry after a step swaps the output's texture into the input's slot (no copy) when the output
// is recomputed every step; otherwise (an input or constant carried, or one output carried into
// several inputs) it draws a copy.
// Intermediates that are not outputs share textures: once a node's last consumer is recorded,
// its texture (and its kernel's scratch textures) may be the target of a later node.
// Transposes read in place and nodes absorbed by another kernel (fusion.mjs) are not recorded
// on their own; what they read stays alive until the pass that reads it.
import { GpuLabError } from '../../errors.mjs';
import { createStepGate } from '../../step-gate.mjs';
import { BACKEND, kernelFor, sizeOf } from './registry.mjs';
import { unsupportedError } from '../../kernels.mjs';
import { indexError } from '../../values.mjs';
import { blockOf, packedWords, storedLength } from '../../dtypes.mjs';
import { absorbedNodes, foldedTransposes } from './fusion.mjs';
import { packedNodes } from './packing.mjs';
import {
  blitCopy, upload, download, layoutFor, sizeKey, texKey, texKindOf,
} from './textures.mjs';

/** Pass uniform type -> WebGL2 setter. */
const SETTERS = { i: 'uniform1i', f: 'uniform1f', u: 'uniform1ui', i2: 'uniform2iv', i4: 'uniform4iv' };

/**
 * @typedef {object} DrawCommand
 * @property {import('./shaders.mjs').GlProgram} prog
 * @property {Array<[WebGLUniformLocation|null, number]>} samplers location, slot
 * @property {Array<[string, WebGLUniformLocation|null, any]>} uniforms setter, location, value
 * @property {number} target slot
 * @property {number[]} alsoTargets slots written through color attachments 1, 2, ...
 * @property {WebGLUniformLocation|null} nLoc
 * @property {WebGLUniformLocation|null} wLoc
 */

/** @param {Map<number, Float32Array>|Record<string, Float32Array>} step @param {number} id */
function feedOf(step, id) {
  return step instanceof Map ? step.get(id) : step[id];
}

export class WebGL2Program {
  /**
   * @param {{gl: WebGL2RenderingContext, ctx: import('./context.mjs').GlContext,
   *   pool: import('./textures.mjs').TexturePool, shaders: import('./shaders.mjs').ShaderCache}} env
   * @param {any} checked
   * @param {{feeds?: Iterable<number>, carry?: Map<number, number>, keep?: Iterable<number>}} session
   */
  constructor(env, checked, { feeds = [], carry = new Map(), keep = [] } = {}) {
    this.env = env;
    this.gl = env.gl;
    /** @type {Map<number, any>} */
    this.nodes = new Map(checked.nodes.map((n) => [n.id, n]));
    this.order = checked.order;
    this.feeds = [...feeds];
    this.carry = carry instanceof Map ? carry
      : new Map(Object.entries(carry).map(([k, v]) => [Number(k), v]));
    /** Nodes whose texture is never shared: everything readable from outside, and constants. */
    this.pinned = new Set([...checked.outputs.map((o) => o.id), ...this.feeds, ...this.carry.keys(),
      ...this.carry.values(), ...keep]);
    this.keep = new Set(keep);
    /** @type {Set<number>} nodes stored packed (packing.mjs), decided in build() */
    this.packed = new Set();
    /** @type {Set<number>} slots holding a packed tensor (4 values per texel) */
    this.packedSlots = new Set();
    /** @type {Map<string, import('./textures.mjs').Tex[]>} textures free for reuse, by size */
    this.reusable = new Map();
    /** @type {import('./textures.mjs').Tex[]} texture of each slot */
    this.slots = [];
    /** @type {number[]} element count of each slot */
    this.slotSize = [];
    /** @type {Map<number, number>} node id -> slot */
    this.slotOf = new Map();
    /** @type {Map<number, number>} carried output id -> the input slot holding its value after a swap */
    this.swapped = new Map();
    /** @type {{slot: number, node: any}[]} index ops' check textures (index.mjs) */
    this.checks = [];
    this.stepsRun = 0;
    this.disposed = false;
  }

  /**
   * A slot of n texels; shared slots may take a texture another node is done with.
   * @param {number} n @param {boolean} [shared]
   * @param {import('./textures.mjs').TexFormat} [format] scratch formats (default: a tensor's R32F)
   */
  allocate(n, shared = false, format = {}) {
    const { channels = 1, layers = 1, width = 0, kind = 'float' } = format;
    const { w, h } = layoutFor(n, this.env.pool.maxSize, width);
    const free = shared ? this.reusable.get(sizeKey(w, h, channels, layers, kind)) : undefined;
    this.slots.push(free?.length ? free.pop() : this.env.pool.acquire(n, format));
    this.slotSize.push(n);
    return this.slots.length - 1;
  }

  /** This program no longer needs the texture of a slot for later nodes. @param {number} slot */
  recycle(slot) {
    const key = texKey(this.slots[slot]);
    if (!this.reusable.has(key)) this.reusable.set(key, []);
    this.reusable.get(key).push(this.slots[slot]);
  }

  /** @param {number} id */
  nodeSlot(id) {
    if (!this.slotOf.has(id)) {
      const node = this.nodes.get(id);
      if (this.packed.has(id)) {
        const cols = node.shape[node.shape.length - 1];
        const slot = this.allocate(sizeOf(node.shape) / 4, !this.pinned.has(id),
          { channels: 4, width: cols / 4 });
        this.packedSlots.add(slot);
        this.slotOf.set(id, slot);
      } else {
        this.slotOf.set(id, this.allocate(texelCount(node), !this.pinned.has(id),
          { kind: texKindOf(node.dtype ?? 'float32') }));
      }
    }
    return this.slotOf.get(id);
  }

  /** Elements held by a slot (a packed one holds 4 per texel). @param {number} slot */
  elementsOf(slot) {
    return this.slotSize[slot] * (this.packedSlots.has(slot) ? 4 : 1);
  }

  /** Allocate, record, compile and upload; the first step can run afterwards. */
  async build() {
    for (const id of this.order) {
      const node = this.nodes.get(id);
      if (node.op === 'input' || kernelFor(node.op)?.constant) this.pinned.add(id);
    }
    const graph = { order: this.order, nodes: this.nodes, pinned: this.pinned,
      options: this.env.kernelOptions };
    this.folded = foldedTransposes(graph);
    this.absorbed = absorbedNodes(graph, this.folded);
    this.packed = packedNodes(graph, this.absorbed, this.folded, this.carry, this.keep,
      { maxTextureSize: this.env.pool.maxSize, options: this.env.kernelOptions });
    for (const id of [...this.order, ...this.feeds, ...this.carry.keys(), ...this.carry.values()]) {
      if (this.pinned.has(id)) this.nodeSlot(id);
    }
    const { init, step } = this.recordKernels();
    const carry = this.planCarry(new Set(step.flatMap((p) => [p.target, ...(p.alsoTargets ?? [])])));
    const all = [...init, ...step, ...carry.copies];
    await this.env.shaders.load(all);
    [this.initCommands, this.stepCommands, this.copyCommands] = await Promise.all(
      [init, step, carry.copies].map((passes) => this.compile(passes)));
    this.swaps = carry.swaps;
    this.blits = carry.blits;
    for (const id of this.order) {
      const node = this.nodes.get(id);
      if (node.op === 'input' && node.data) upload(this.gl, this.slots[this.slotOf.get(id)], texelData(node, node.data));
    }
    for (const cmd of this.initCommands) this.draw(cmd);
    this.checkGl('prepare');
  }

  /** The passes of every live node: constants once (init), the rest every step. */
  recordKernels() {
    const init = [];
    const step = [];
    const folded = this.folded;
    const absorbed = this.absorbed;
    /** @type {Map<string, any>} values kernels share within a step (k.shared) */
    const shared = new Map();
    /** An operand as it is read: a folded transpose is read from its source. @param {number} op */
    const source = (op) => folded.get(op) ?? op;
    const position = new Map(this.order.map((id, i) => [id, i]));
    /** Where a node's passes are recorded: an absorbed node's with its absorber's. */
    const recordedAt = (id) => position.get(absorbed.get(id) ?? id);
    /** @type {Map<number, number>} node id -> position of its last consumer in the order */
    const lastUse = new Map();
    for (const id of this.order) {
      if (folded.has(id)) continue;
      const at = recordedAt(id);
      for (const op of this.nodes.get(id).operands) {
        lastUse.set(source(op), Math.max(lastUse.get(source(op)) ?? -1, at));
      }
    }
    this.order.forEach((id, i) => {
      const node = this.nodes.get(id);
      if (node.op === 'input' || folded.has(id) || absorbed.has(id)) return;
      const inside = [...absorbed].filter(([, by]) => by === id).map(([a]) => a);
      const kernel = kernelFor(node.op);
      if (!kernel) {
        // supports() refused such a graph already; a program built without it says the same.
        throw unsupportedError(BACKEND, [{ id, op: node.op, dtype: node.dtype ?? 'float32',
          reason: `no ${node.op} kernel` }]);
      }
      const temps = [];
      const passes = kernel.build(node, {
        // An absorbed node gets its texture only if the kernel writes it (asks for its slot).
        slot: (opId) => (absorbed.get(opId) === id ? this.nodeSlot(opId) : this.slotOf.get(opId)),
        shape: (opId) => this.nodes.get(opId).shape,
        out: this.nodeSlot(id),
        maxTextureSize: this.env.pool.maxSize,
        options: this.env.kernelOptions,
        transposeSource: (opId) => folded.get(opId),
        absorbed: (opId) => absorbed.get(opId) === id,
        packed: (opId) => this.packed.has(opId),
        node: (opId) => this.nodes.get(opId),
        temp: (n) => {
          temps.push(this.allocate(n, true));
          return temps[temps.length - 1];
        },
        // an index op's check texture (index.mjs): kept, read back after every step
        check: (n) => {
          const slot = this.allocate(n, false, { kind: 'uint' });
          this.checks.push({ slot, node });
          return slot;
        },
        // A value several nodes compute alike (same key: the same operands and attributes),
        // computed once per step by the first node's passes; its slots are never recycled.
        shared: (key, make) => {
          if (shared.has(key)) return { value: shared.get(key), passes: [] };
          const made = make((n, format = {}) => this.allocate(n, false, format));
          shared.set(key, made.value);
          return made;
        },
        temp4: (texels, format = {}) => {
          temps.push(this.allocate(texels, true, { ...format, channels: 4 }));
          return temps[temps.length - 1];
        },
      });
      (kernel.constant ? init : step).push(...passes);
      // Recycled only after this node's passes, so no pass renders into a texture it reads.
      const read = [node, ...inside.map((a) => this.nodes.get(a))].flatMap((n) => n.operands);
      for (const op of new Set(read.map(source))) {
        if (this.pinned.has(op) || lastUse.get(op) !== i || !this.slotOf.has(op)) continue;
        this.recycle(this.slotOf.get(op));
      }
      temps.forEach((t) => this.recycle(t));
    });
    return { init, step };
  }

  /**
   * Swaps for outputs recomputed every step and carried into one input; copies for the rest.
   * @param {Set<number>} recomputed slots written by the step passes
   */
  planCarry(recomputed) {
    const swaps = [];
    const copies = [];
    /** @type {Array<[number, number]>} integer tensors are copied by blit: [from, to] slots */
    const blits = [];
    const taken = new Set();
    for (const [input, output] of this.carry) {
      const inSlot = this.slotOf.get(input);
      const outSlot = this.slotOf.get(output);
      if (inSlot === outSlot) continue;
      if (recomputed.has(outSlot) && !taken.has(output)) {
        taken.add(output);
        swaps.push([inSlot, outSlot]);
        this.swapped.set(output, inSlot);
      }
    }
    /** @type {Array<[number, number]>} [from, to] slots */
    const moves = [];
    for (const [input, output] of this.carry) {
      const inSlot = this.slotOf.get(input);
      const outSlot = this.slotOf.get(output);
      if (inSlot === outSlot || this.swapped.get(output) === inSlot) continue;
      // After the swaps the output's value lives in the slot it was swapped into.
      moves.push([this.swapped.get(output) ?? outSlot, inSlot]);
    }
    for (const [from, to] of this.simultaneous(moves)) {
      if (this.slots[to].kind !== 'float') blits.push([from, to]);
      else copies.push({ shader: 'copy.glsl', inputs: { u_a: from }, target: to });
    }
    return { swaps, copies, blits };
  }

  /**
   * Carries move at once (two carried inputs may swap): a source that another move overwrites
   * is first copied to a scratch slot of its own, and the move reads that.
   * @param {Array<[number, number]>} moves [from, to] slots
   * @returns {Array<[number, number]>} in the order to run them
   */
  simultaneous(moves) {
    const targets = new Set(moves.map(([, to]) => to));
    const first = [];
    const then = moves.map(([from, to]) => {
      if (!targets.has(from)) return [from, to];
      const scratch = this.allocate(this.slotSize[from], false, { kind: this.slots[from].kind });
      first.push([from, scratch]);
      return [scratch, to];
    });
    return [...first, ...then];
  }

  /** @param {import('./registry.mjs').Pass[]} passes @returns {Promise<DrawCommand[]>} */
  async compile(passes) {
    const shaders = this.env.shaders;
    const progs = await Promise.all(passes.map((p) => shaders.get(p.shader, p.defines ?? {})));
    return passes.map((p, i) => {
      const prog = progs[i];
      return {
        prog, target: p.target, alsoTargets: p.alsoTargets ?? [],
        samplers: Object.entries(p.inputs ?? {}).map(([name, slot]) => [shaders.location(prog, name), slot]),
        uniforms: Object.entries(p.uniforms ?? {}).map(([name, [type, value]]) =>
          [SETTERS[type], shaders.location(prog, name), value]),
        nLoc: shaders.location(prog, 'u_n'),
        wLoc: shaders.location(prog, 'u_w'),
      };
    });
  }

  /**
   * The framebuffer a draw renders into: the target's own, or for a pass with several targets
   * this program's multi-target framebuffer with their current textures attached (carried
   * slots swap textures between steps, so attachments are set per draw).
   * @param {DrawCommand} cmd
   */
  bindTargets(cmd) {
    const gl = this.gl;
    const target = this.slots[cmd.target];
    if (!cmd.alsoTargets.length) {
      gl.bindFramebuffer(gl.FRAMEBUFFER, target.framebuffer);
      return target;
    }
    this.multiTarget ??= gl.createFramebuffer();
    gl.bindFramebuffer(gl.FRAMEBUFFER, this.multiTarget);
    const slots = [cmd.target, ...cmd.alsoTargets];
    const attach = (i, texture) => gl.framebufferTexture2D(gl.FRAMEBUFFER,
      gl.COLOR_ATTACHMENT0 + i, gl.TEXTURE_2D, texture, 0);
    slots.forEach((slot, i) => attach(i, this.slots[slot].texture));
    // Detach what an earlier pass with more targets left: an attached texture that a later
    // pass samples would be a feedback loop even if it is not drawn to.
    for (let i = slots.length; i < (this.multiTargetCount ?? 0); i++) attach(i, null);
    this.multiTargetCount = slots.length;
    gl.drawBuffers(slots.map((_, i) => gl.COLOR_ATTACHMENT0 + i));
    return target;
  }

  /** @param {DrawCommand} cmd */
  draw(cmd) {
    const gl = this.gl;
    gl.useProgram(cmd.prog.handle);
    const target = this.bindTargets(cmd);
    gl.viewport(0, 0, target.w, target.h);
    cmd.samplers.forEach(([, slot], unit) => {
      gl.activeTexture(gl.TEXTURE0 + unit);
      const tex = this.slots[slot];
      gl.bindTexture(tex.target, tex.texture);
    });
    // Uniforms are program state: a command that drew this program last (the same pass one
    // step earlier, nothing else in between) left them as it needs them. Every uniform of a
    // pass is fixed when it is recorded (a carried slot swaps to a texture of the same size).
    if (cmd.prog.lastCommand !== cmd) {
      cmd.samplers.forEach(([loc], unit) => gl.uniform1i(loc, unit));
      gl.uniform1i(cmd.nLoc, this.slotSize[cmd.target]);
      gl.uniform1i(cmd.wLoc, target.w);
      for (const [setter, loc, value] of cmd.uniforms) gl[setter](loc, value);
      cmd.prog.lastCommand = cmd;
    }
    // Units past this program's samplers may still hold older textures, even this target:
    // that is no feedback loop, since WebGL only checks the units the program samples.
    gl.drawArrays(gl.TRIANGLES, 0, 3);
  }

  /** Throw BACKEND on a lost context or a GL error. @param {string} when */
  checkGl(when) {
    this.env.ctx.check();
    const err = this.gl.getError();
    if (err !== this.gl.NO_ERROR) {
      this.env.ctx.check();
      throw new GpuLabError('BACKEND', `WebGL2 error 0x${err.toString(16)} during ${when}`);
    }
  }

  /**
   * Run the steps (feed, draw, carry each), then read back readIds.
   * @param {Array<Map<number, Float32Array>|Record<string, Float32Array>>} steps
   * @param {Iterable<number>} readIds
   */
  async run(steps, readIds) {
    this.checkLive();
    const out = new Map();
    const gate = createStepGate(() => this.disposed); // dispose() stops a long run between steps
    for (let s = 0; s < steps.length; s++) {
      const wait = gate();
      if (wait) await wait;
      const step = steps[s];
      for (const id of this.feeds) {
        const data = feedOf(step, id);
        if (data) upload(this.gl, this.slots[this.slotOf.get(id)], texelData(this.nodes.get(id), data));
      }
      if (this.env.profile) this.profiledDraws(this.env.profile);
      else for (const cmd of this.stepCommands) this.draw(cmd);
      // outputs are the last step's values, read before its carry moves them (an output that
      // is a carried input keeps the value that step used, as on every backend)
      if (s === steps.length - 1) for (const id of readIds) out.set(id, this.read(id, true));
      this.readChecks();
      this.applyCarry();
      this.stepsRun++;
    }
    this.checkGl('run');
    this.env.ctx.check();  // a context lost during readPixels leaves zeros, not values
    return out;
  }

  /**
   * The step's draws, each followed by a 1-texel read of its target so the time of every pass
   * is measured separately (test hook webgl2Profile; slows the step down).
   * @param {Array<{key: string, n: number, ms: number}>} log
   */
  profiledDraws(log) {
    const gl = this.gl;
    const texel = new Float32Array(4);
    for (const cmd of this.stepCommands) {
      const t0 = performance.now();
      this.draw(cmd);
      gl.bindFramebuffer(gl.READ_FRAMEBUFFER, this.slots[cmd.target].framebuffer);
      gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, texel);
      log.push({ key: cmd.prog.key, n: this.slotSize[cmd.target], ms: performance.now() - t0 });
    }
  }

  /**
   * The index ops' check words (index.glsl IDX_OP 5): the smallest position of an index out of
   * range in this step is BACKEND naming the node and the position (the session is then
   * poisoned: STATE), before anything of this step is carried.
   */
  readChecks() {
    for (const { slot, node } of this.checks) {
      const words = download(this.gl, this.slots[slot], this.slotSize[slot], 'uint32');
      const bad = words.reduce((m, w) => Math.min(m, w), 0xffffffff);
      if (bad !== 0xffffffff) {
        throw indexError('BACKEND', node, this.nodes.get(node.operands[0]).shape, bad);
      }
    }
  }

  applyCarry() {
    for (const [inSlot, outSlot] of this.swaps) {
      [this.slots[inSlot], this.slots[outSlot]] = [this.slots[outSlot], this.slots[inSlot]];
    }
    for (const cmd of this.copyCommands) this.draw(cmd);
    for (const [from, to] of this.blits) blitCopy(this.gl, this.slots[from], this.slots[to]);
  }

  /**
   * Current value of a node, as a typed array of its dtype: a carried output lives in its
   * input's slot after a swap (not yet during the step that computed it: `beforeCarry`).
   * @param {number} id @param {boolean} [beforeCarry]
   */
  read(id, beforeCarry = false) {
    const slot = this.currentSlot(id, beforeCarry);
    const dtype = this.nodes.get(id)?.dtype ?? 'float32';
    return download(this.gl, this.slots[slot], this.elementsOf(slot), dtype);
  }

  /** The slot holding a node's current value (see read). @param {number} id @param {boolean} [beforeCarry] */
  currentSlot(id, beforeCarry = false) {
    const slot = this.slotOf.get(id);
    if (slot === undefined) {
      throw new GpuLabError('BACKEND', `node ${id} has no tensor on the webgl2 backend`, id);
    }
    return !beforeCarry && this.stepsRun > 0 && this.swapped.has(id) ? this.swapped.get(id) : slot;
  }

  /** The texture of a node's current value, for drawing it (present/webgl2.mjs). @param {number} id */
  currentTexture(id) {
    return this.slots[this.currentSlot(id)];
  }

  /** @param {number} id */
  async download(id) {
    this.checkLive();
    const data = this.read(id);
    this.checkGl('download');
    return data;
  }

  checkLive() {
    if (this.disposed) throw new GpuLabError('DISPOSED', 'this webgl2 program was disposed');
    this.env.ctx.check();
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    if (this.multiTarget) this.gl.deleteFramebuffer(this.multiTarget);
    for (const tex of new Set(this.slots)) this.env.pool.release(tex);
    this.slots = [];
    this.onDispose?.();
  }
}

/**
 * Texels of a node's texture: one per element, a q4_k / q6_k tensor's bytes 4 to a texel.
 * @param {{shape: number[], dtype?: string}} node
 */
function texelCount(node) {
  const n = sizeOf(node.shape);
  return blockOf(node.dtype ?? 'float32') ? Math.ceil(storedLength(node.dtype, n) / 4) : n;
}

/** Upload data: a q4_k / q6_k tensor's bytes as packed words. @param {any} node @param {any} data */
function texelData(node, data) {
  return blockOf(node.dtype ?? 'float32') ? packedWords(data) : data;
}
