// The planner's rules for the student ops, twin of pylib/gpulab/native/planner_student.py
// (e2e/test_plans_equal.py compares the plans). A `wgsl` node is one dispatch of kernel "wgsl"
// (the program compiles the node's own source, not a file) with the binding convention's
// order: inputs, then one buffer per result; its params go in the step's uniform words in the
// params struct's member order. Its value is its first result; `wgsl_output` is a view (alias)
// of result `index`, no dispatch.
import { DTYPE_NAMES } from './dtypes.mjs';
import { paramWords } from './wgsl-op.mjs';

/** @param {number[]} shape */
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/** The uniform words: i32 values as their u32 bits (the packer writes u32 and f32). */
function studentParams(node) {
  return paramWords(node.attrs.source, node.attrs.params).map(([type, v]) =>
    (type === 'f32' ? ['f32', v] : ['u32', v >>> 0]));
}

/** @param {any} ctx the PlanContext @param {any} node */
function planWgsl(ctx, node) {
  const results = node.attrs.results;
  const buffers = results.map((/** @type {{shape: number[]}} */ r, /** @type {number} */ i) =>
    ctx.allocate(node, count(r.shape), i === 0 && ctx.outputIds.has(node.id) ? 'output' : 'temp'));
  ctx.bind(node, buffers[0], false);
  const inputs = node.operands.map((/** @type {number} */ _, /** @type {number} */ i) => ctx.operand(node, i));
  const step = { node: node.id, kernel: 'wgsl', entry: 'main', overrides: {},
    params: studentParams(node), bindings: [...inputs, ...buffers],
    dispatch: [...node.attrs.workgroups] };
  if (results.length !== 1) step.writes = results.length;
  ctx.steps.push(step);
}

/** @param {any} ctx @param {any} node */
function planWgslOutput(ctx, node) {
  const of = ctx.node(node.operands[0]);
  const step = ctx.steps.find((/** @type {any} */ s) => s.node === of.id && s.kernel === 'wgsl');
  const first = step.bindings.length - of.attrs.results.length;
  ctx.bind(node, step.bindings[first + node.attrs.index], true);
}

export const STUDENT_RULES = { wgsl: planWgsl, wgsl_output: planWgslOutput };
export const STUDENT_DTYPES = { wgsl: DTYPE_NAMES, wgsl_output: DTYPE_NAMES };
