// Where the wasm backend's MLP step spends its time, under node:
//   node bench/wasm/profile.mjs
// Prints the best time of each kernel of a prepared session step (its program's steps run one
// by one), the GFLOP/s of the two large matmuls, and the parts of one execute.
import { createBackend } from '../../backends-js/src/backends/wasm.mjs';
import { validateGraph } from '../../backends-js/src/validate.mjs';
import { mlpData, mlpStepGraph } from '../../backends-js/src/models/mlp.mjs';

const ROUNDS = 50;
const data = mlpData({ batches: 1 });
const be = await createBackend();

/** Best-of-ROUNDS time of every kernel in one session step. */
async function kernels() {
  const { graph, carry, feeds, ids } = mlpStepGraph(data, { feedXY: true });
  const checked = validateGraph(graph);
  const byName = new Map(graph.outputs.map((o) => [o.name, o.id]));
  const carryIds = new Map(Object.entries(carry).map(([i, name]) => [Number(i), byName.get(name)]));
  const program = await be.prepare(checked, { feeds, carry: carryIds, keep: [...carryIds.values()] });
  await program.run([new Map([[ids.x, data.xs[0]], [ids.y, data.ys[0]]])], []);
  const best = new Map();
  for (let r = 0; r < ROUNDS; r++) {
    for (const step of program.steps) {
      const t0 = performance.now();
      step.run(program.ptr, program.scratch);
      const ms = performance.now() - t0;
      best.set(step.id, Math.min(best.get(step.id) ?? Infinity, ms));
    }
    program.applyCarry();
  }
  const rows = [...best].sort((a, b) => b[1] - a[1]).map(([id, ms]) => {
    const node = checked.byId.get(id);
    const fused = node.operands.filter((o) => program.fused.has(o)).length;
    const k = node.op === 'matmul' ? checked.byId.get(node.operands[0]).shape.at(-1) : 0;
    return { id, op: node.op, shape: node.shape, k, ms,
      note: fused ? `${fused} transposed operand(s) read in place` : '' };
  });
  program.dispose();
  return rows;
}

/** Best-of-ROUNDS parts of one execute of the step graph. */
async function execute() {
  const { graph } = mlpStepGraph(data);
  const best = { validate: Infinity, prepare: Infinity, runAndRead: Infinity, total: Infinity };
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const checked = validateGraph(graph);
    const t1 = performance.now();
    const program = await be.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
    const t2 = performance.now();
    await program.run([new Map()], checked.outputs.map((o) => o.id));
    program.dispose();
    const t3 = performance.now();
    best.validate = Math.min(best.validate, t1 - t0);
    best.prepare = Math.min(best.prepare, t2 - t1);
    best.runAndRead = Math.min(best.runAndRead, t3 - t2);
    best.total = Math.min(best.total, t3 - t0);
  }
  return best;
}

const rows = await kernels();
const total = rows.reduce((s, r) => s + r.ms, 0);
console.log(`kernels of one step (best of ${ROUNDS}), sum ${total.toFixed(3)} ms:`);
for (const r of rows.slice(0, 10)) {
  console.log(`  ${r.op.padEnd(18)} [${r.shape}]`.padEnd(40) + `${r.ms.toFixed(3)} ms ${r.note}`);
}
for (const r of rows.filter((x) => x.op === 'matmul' && x.ms > 0.1)) {
  const gflops = (2 * r.shape[0] * r.shape[1] * r.k) / r.ms / 1e6;
  console.log(`  matmul [${r.shape}] (k=${r.k}): ${gflops.toFixed(1)} GFLOP/s`);
}
const ex = await execute();
console.log(`execute (best of ${ROUNDS}): ` + Object.entries(ex).map(([k, v]) => `${k} ${v.toFixed(3)} ms`).join(', '));
be.dispose();
