// The browser WebGPU backend: runs the GPU plan of backends-js/src/planner.mjs with the WGSL
// files of kernels/wgsl/ (the same bytes the native wgpu-py executor reads).
//
// Policy: software adapters (SwiftShader, llvmpipe, lavapipe, softpipe, Microsoft Basic Render,
// or any adapter flagged as a fallback) are refused with UNAVAILABLE unless allowSoftware.
// Errors after validation (WGSL, validation, out of memory, device loss) are BACKEND.
//
// Test hooks (all optional, on the `hooks` object given to createBackend / createRuntime):
//   hooks.planGraph(checked, limits)   replaces the planner (hand-written plans)
//   hooks.limits                       {name: value}: lowers limits the planner sees (so a test
//                                       can take the 64x64 matmul path on a 32 KiB device)
//   hooks.transformPlan(plan)          edits a plan before it runs (inject a bad dispatch)
//   hooks.kernelSource(kernel)         WGSL text for a kernel, instead of fetching it (or null)
//   hooks.transformWgsl(kernel, src)   edits a kernel's source (inject a WGSL error)
//   hooks.onSubmit()                   called right after each queue submission
//   hooks.maxBufferSize                bytes: lowers the device's maxBufferSize for the pool
//                                       (refusing larger buffers) and the run splitting
//   hooks.stepsPerSubmit               steps per submission of a multi-step run (0: all in
//                                       one; default 1 on hardware, 0 on software adapters)
//   hooks.carryCopies                  true: carries are copied after each step even where
//                                       they could ping-pong
//   hooks.feedPairs                    true: fed inputs get a second buffer (swapped steps
//                                       read it), so stepsPerSubmit 2 writes feeds directly
//                                       (these three are read at prepare)
// and the backend fills in:
//   hooks.loseDevice()                 destroys the device as if it were lost
//   hooks.webgpuStats()                {live, liveBytes, free, freeBytes, created, reused, submits,
//                                       pipelines, uncapturedErrors} (also backend.stats())

import { GpuLabError } from '../errors.mjs';
import { kernelFile } from '../kernel-files.mjs';
import { acquireAdapter, describeAdapter, softwareName } from './webgpu/adapter.mjs';
import { openDevice, webgpuFailure } from './webgpu/device.mjs';
import { PipelineCache } from './webgpu/kernels.mjs';
import { DEFAULT_DTYPES, getKernel, registerKernel, supportsGraph } from '../kernels.mjs';
import { BufferPool } from './webgpu/pool.mjs';
import { WebGpuProgram } from './webgpu/program.mjs';
import { StudentKernels } from './webgpu/student.mjs';
import { deadlineOption } from './webgpu/deadline.mjs';

export const name = 'webgpu';

/** Where kernel `<name>` lives: kernels/wgsl/<name>.wgsl (see kernel-files.mjs for the layouts). */
const kernelUrl = (/** @type {string} */ kernel) => kernelFile(`wgsl/${kernel}.wgsl`);

/** @type {Promise<typeof import('../planner.mjs')> | null} */
let plannerModule = null;

/** The planner, imported on first use (so the backend still reports adapters without it). */
function loadPlanner() {
  plannerModule ??= import('../planner.mjs').catch((err) => {
    plannerModule = null;
    throw new GpuLabError('BACKEND', `cannot load the GPU planner (planner.mjs): ${err.message}`);
  });
  return plannerModule;
}

/**
 * The planner's rules as this backend's kernels in the shared registry (once: the planner
 * module is loaded once per page). A rule's dtypes are planner.RULE_DTYPES[op], else float32;
 * its rank planner.RULE_RANKS[op], else 4.
 * @param {typeof import('../planner.mjs')} planner
 */
function registerRules(planner) {
  for (const [op, plan] of Object.entries(planner.RULES)) {
    if (getKernel(op, name)) continue;
    registerKernel({ op, backend: name, plan, dtypes: planner.RULE_DTYPES?.[op] ?? DEFAULT_DTYPES,
      maxRank: planner.RULE_RANKS?.[op] });
  }
}

/**
 * Which nodes of a checked graph this backend has no kernel for: the planner's rule table and
 * its dtypes, asked before any planning or device work.
 * @param {any} checked @param {{without?: Iterable<string>}} [options]
 */
export async function supports(checked, options) {
  registerRules(await loadPlanner());
  return supportsGraph(name, checked, options);
}

/**
 * A description when the adapter gives none: "SwiftShader (google, swiftshader)" for a
 * software renderer, else its vendor, architecture and device.
 * @param {import('./webgpu/adapter.mjs').AdapterFacts} facts
 */
function describeFacts(facts) {
  const soft = softwareName(facts);
  if (soft) return describeAdapter(facts, soft);
  const words = [facts.vendor, facts.architecture, facts.device].filter(Boolean);
  return words.join(' ') || 'WebGPU adapter';
}

/**
 * The limits the planner sees: the device's, plus `minMatmulWorkgroups` (a software adapter
 * is a CPU, busy with any workgroup count, so it takes big matmul tiles: docs/plan.md), each
 * lowered to `lower[key]` where a test asks for less.
 * @param {Record<string, number>} device @param {number} minMatmulWorkgroups
 * @param {Record<string, number>} [lower]
 */
function plannerLimits(device, minMatmulWorkgroups, lower = {}) {
  const out = { ...device, minMatmulWorkgroups };
  for (const [key, value] of Object.entries(lower)) {
    if (key in out && Number.isInteger(value) && value > 0) out[key] = Math.min(out[key], value);
  }
  return out;
}

/**
 * @param {{allowSoftware?: boolean, softwareHint?: string, hooks?: Record<string, any>}} [opts]
 */
export async function createBackend({ allowSoftware = false, softwareHint, deadlineMs, hooks: given = {} } = {}) {
  const deadline = deadlineOption(deadlineMs); // the per-submission deadline
  /** @type {Record<string, any>} */
  const hooks = given && typeof given === 'object' ? given : {};
  const { adapter, facts, software } = await acquireAdapter({ allowSoftware, softwareHint });
  const gpu = await openDevice(adapter);
  const counters = { submits: 0 };
  const pool = new BufferPool(gpu.device, { maxBufferSize: hooks.maxBufferSize });
  const kernels = new PipelineCache(gpu, kernelUrl, hooks);
  const student = new StudentKernels(gpu, undefined, software); // students' kernels, chunked on software
  const ctx = { gpu, pool, kernels, student, counters, hooks, software, deadlineMs: deadline };
  const info = {
    vendor: facts.vendor,
    architecture: facts.architecture,
    description: facts.description || describeFacts(facts),
    device: facts.device,
    software,
  };
  const stats = () => ({
    ...pool.stats(),
    submits: counters.submits,
    pipelines: kernels.pipelinesCreated + student.pipelinesCreated,
    uncapturedErrors: [...gpu.uncaptured],
  });
  hooks.loseDevice = () => gpu.device.destroy();
  hooks.webgpuStats = stats;

  return {
    name,
    info,
    limits: gpu.limits(),
    stats,

    /**
     * Plan, build pipelines, allocate and upload a checked graph.
     * @param {any} checked
     * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} [session]
     */
    async prepare(checked, session = {}) {
      gpu.check();
      let plan;
      const planner = await loadPlanner();
      const packParams = planner.packParams;
      try {
        const planGraph = hooks.planGraph || planner.planGraph;
        const minGroups = software ? planner.MATMUL_MIN_WORKGROUPS_SOFTWARE
          : planner.MATMUL_MIN_WORKGROUPS;
        plan = planGraph(checked, plannerLimits(gpu.limits(), minGroups, hooks.limits));
        if (hooks.transformPlan) plan = hooks.transformPlan(plan);
      } catch (err) {
        throw webgpuFailure(err, 'planning');
      }
      const program = new WebGpuProgram({ ...ctx, packParams }, plan, checked, session);
      try {
        await program.init();
      } catch (err) {
        program.dispose();
        throw err;
      }
      return program;
    },

    dispose() {
      if (gpu.disposed) return;
      pool.clear();
      gpu.dispose();
    },
  };
}
