// The JavaScript reference backend: every op of the op table on Float32Arrays, in the
// protocol's numerics (float32 arithmetic, fixed reduction order). Always available, used when
// no accelerated backend is, and the reference the others are compared with.
import { GpuLabError } from '../errors.mjs';
import { supportsGraph } from '../kernels.mjs';
import { allocTyped } from '../dtypes.mjs';
import { createStepGate } from '../step-gate.mjs';
import { BACKEND, getKernel } from './cpu/registry.mjs';
import './cpu/maps.mjs';
import './cpu/reduce.mjs';
import './cpu/layout.mjs';
import './cpu/optimizers.mjs';
import './cpu/map_bits.mjs';
import './cpu/extremes.mjs';
import './cpu/quant.mjs';
import './cpu/select.mjs';
import './cpu/index_ops.mjs';
import './cpu/conv_ops.mjs';

export const name = 'cpu';

const INFO = Object.freeze({
  vendor: 'gpu-lab',
  architecture: 'js',
  description: 'JavaScript reference (CPU)',
  software: false,
});

/**
 * Which nodes of a checked graph this backend has no kernel for (none, for every op that
 * pylib/gpulab/conformance/lanes.json does not list on cpu: test/kernels.test.mjs checks that).
 * @param {CheckedGraph} checked @param {{without?: Iterable<string>}} [options]
 */
export function supports(checked, options) {
  return supportsGraph(BACKEND, checked, options);
}

/**
 * @typedef {import('../validate.mjs').CheckedGraph} CheckedGraph
 * @typedef {{feeds: number[], carry: Map<number, number>, keep: number[]}} PrepareOptions
 */

/**
 * A prepared graph: one buffer per live node, allocated once; run() replays the order.
 */
class CpuProgram {
  /** @param {CheckedGraph} checked @param {PrepareOptions} options */
  constructor(checked, { carry }) {
    this.checked = checked;
    this.disposed = false;
    this.carry = [...carry.entries()];
    /** @type {Map<number, import('../dtypes.mjs').TypedData>} typed by each node's dtype */
    this.buffers = new Map();
    for (const id of checked.order) this.allocate(checked.byId.get(id));
    for (const [inputId] of this.carry) {
      if (!this.buffers.has(inputId)) this.allocate(checked.byId.get(inputId));
    }
    // Carry sources are copied aside before any input is overwritten, so two carries may swap.
    this.carryScratch = this.carry.map(([inputId]) => this.buffers.get(inputId).slice());
    this.steps = checked.order.map((id) => {
      const node = checked.byId.get(id);
      return {
        node,
        kernel: getKernel(node.op),
        out: this.buffers.get(id),
        ins: node.operands.map((ref) => this.buffers.get(ref)),
        inShapes: node.operands.map((ref) => checked.byId.get(ref).shape),
        inDtypes: node.operands.map((ref) => checked.byId.get(ref).dtype),
      };
    });
  }

  /** @param {import('../validate.mjs').CheckedNode} node */
  allocate(node) {
    const buffer = allocTyped(node.dtype, node.shape.reduce((p, d) => p * d, 1));
    if (node.data) buffer.set(node.data);
    this.buffers.set(node.id, buffer);
  }

  /**
   * One step; the gate may pause between nodes (step-gate.mjs) and refuses once disposed.
   * @param {Map<number, Float32Array>} feeds @param {() => Promise<void>|void} gate
   */
  async runStep(feeds, gate) {
    for (const [id, data] of feeds) this.buffers.get(id)?.set(data);
    for (const s of this.steps) {
      const wait = gate();
      if (wait) await wait;
      s.kernel(s.out, s.ins, s.node, s.inShapes, s.inDtypes);
    }
  }

  applyCarry() {
    this.carry.forEach(([, outputId], i) => this.carryScratch[i].set(this.buffers.get(outputId)));
    this.carry.forEach(([inputId], i) => this.buffers.get(inputId).set(this.carryScratch[i]));
  }

  /**
   * @param {Map<number, Float32Array>[]} steps
   * @param {number[]} readIds
   * @returns {Promise<Map<number, Float32Array>>}
   */
  async run(steps, readIds) {
    /** @type {Map<number, Float32Array>} */
    const read = new Map();
    const gate = createStepGate(() => this.disposed);
    for (let i = 0; i < steps.length; i++) {
      await this.runStep(steps[i], gate);
      // Outputs are the last step's values, read before that step's carry moves them.
      if (i === steps.length - 1) for (const id of readIds) read.set(id, this.buffers.get(id).slice());
      this.applyCarry();
    }
    return read;
  }

  /** @param {number} id */
  async download(id) {
    const buffer = this.buffers.get(id);
    if (!buffer) throw new GpuLabError('VALIDATION', `cpu program holds no tensor with id ${id}`);
    return buffer.slice();
  }

  dispose() {
    this.disposed = true; // a run in flight stops at its next step or node
    this.buffers.clear();
    this.steps = [];
  }
}

/**
 * @param {{allowSoftware?: boolean, hooks?: object}} [options]
 */
export async function createBackend(options = {}) {
  void options;
  return {
    name,
    info: { ...INFO },
    /** @param {CheckedGraph} checked @param {PrepareOptions} prepareOptions */
    async prepare(checked, prepareOptions) {
      return new CpuProgram(checked, prepareOptions);
    },
    dispose() {},
  };
}
