// The cost model and cancellation between steps (defect 14 of the hostile-input review's ranked
// list, `issues show 11`): a graph estimated past a CPU backend's limit is refused with LIMIT
// naming the estimate and the limit before any work, and dispose() stops a long run between its
// steps (or an execute between its nodes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { backendModel, graphCostS } from '../src/cost.mjs';
import { validateGraph } from '../src/validate.mjs';
import { table } from '../src/optable.mjs';
import { atFirstYield, countingRegistry } from './work-counters.mjs';

const MiB = 1024 * 1024;
const BIG = { memoryBytes: 1536 * MiB }; // so the cost model, not the memory quota, refuses

/** [n, n] @ [n, n]. */
const matmul = (n) => ({ version: 1, nodes: [{ id: 0, op: 'full', shape: [n, n], value: 1 },
  { id: 1, op: 'matmul', a: 0, b: 0 }], outputs: [{ name: 'y', id: 1 }] });

/** A session graph: x -> `depth` chained ops over n elements, carried back into x. */
const chain = (n, depth, op = 'tanh') => ({ version: 2, nodes: [
  { id: 0, op: 'input', shape: [n], data: new Array(n).fill(0.5) },
  ...Array.from({ length: depth }, (_, i) => ({ id: i + 1, op, a: i }))],
  outputs: [{ name: 'y', id: depth }] });

async function rejects(promise, code, pattern) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

test('defect 14: an 8192^3 matmul is refused on cpu and wasm with LIMIT, before any work', async () => {
  for (const backend of ['cpu', 'wasm']) {
    const { registry, prepared } = countingRegistry();
    const rt = await createRuntime({ backend, quotas: BIG, hooks: { registry } });
    const limit = backendModel(backend).limit_s;
    const estimate = graphCostS(validateGraph(matmul(8192)), backend);
    assert.ok(estimate > 5 * limit, `${backend}: ${estimate} s`);
    const seconds = estimate.toFixed(0);
    for (const call of [rt.execute(matmul(8192)), rt.prepare(matmul(8192))]) {
      await rejects(call, 'LIMIT', new RegExp(`about ${seconds} s on the ${backend} backend, ` +
        `past its limit of ${limit} s per evaluation \\(quotas.maxCostS`));
    }
    assert.equal(prepared.count, 0, 'refused before any work: no program was prepared');
    assert.deepEqual(rt.quotas.used, { memoryBytes: 0, buffers: 0, pipelines: 0 });
    // under the limit it runs (and the count counts)
    const ok = await rt.execute(matmul(64));
    assert.equal(ok.outputs.y.data[0], 64);
    assert.equal(prepared.count, 1);
    rt.dispose();
  }
});

test('defect 14: quotas.maxCostS overrides the limit; bad values are VALIDATION', async () => {
  const rt = await createRuntime({ backend: 'cpu', quotas: { maxCostS: 1e-6 } });
  assert.equal(rt.quotas.maxCostS, 1e-6);
  await rejects(rt.execute(matmul(64)), 'LIMIT', /past its limit of 0.000001 s/);
  rt.dispose();
  for (const maxCostS of [0, -1, 'a', Infinity, NaN, 1e9]) {
    await rejects(createRuntime({ backend: 'cpu', quotas: { maxCostS } }), 'VALIDATION',
      /maxCostS must be a number of seconds/);
  }
});

test('defect 14: the cost model is data: every backend of the table, GPUs without one', () => {
  const { backends, flop_ops: flopOps } = table.cost_model;
  assert.deepEqual(Object.keys(backends).sort(),
    ['cpu', 'cpu-python', 'wasm', 'webgl2', 'webgpu', 'wgpu']);
  for (const [name, model] of Object.entries(backends)) {
    if (model === null) continue;
    assert.ok(model.limit_s > 0 && model.ns_per_flop > 0 && model.ns_per_element.default > 0, name);
    for (const op of Object.keys(model.ns_per_element)) {
      assert.ok(op === 'default' || Object.hasOwn(table.ops, op), `${name}: ${op}`);
    }
  }
  for (const op of flopOps) assert.ok(Object.hasOwn(table.ops, op), op);
  assert.equal(graphCostS(validateGraph(matmul(8)), 'webgpu'), null);
  const checked = validateGraph(matmul(10));
  assert.equal(graphCostS(checked, 'cpu'), 2 * 100 * 10 * backends.cpu.ns_per_flop * 1e-9);
});

for (const backend of ['cpu', 'wasm']) {
  test(`defect 14: dispose() stops a long ${backend} session run between steps`, async () => {
    for (const how of ['runtime', 'session']) {
      const rt = await createRuntime({ backend });
      const graph = chain(1 << 15, 8);
      const session = await rt.prepare(graph, { carry: { 0: 'y' } });
      const t0 = performance.now();
      await session.run(1);
      const stepMs = performance.now() - t0;
      const steps = Math.ceil(20000 / Math.max(stepMs, 0.01)); // about 20 s of steps: never done first
      const gate = atFirstYield(() => (how === 'runtime' ? rt.dispose() : session.dispose()));
      try {
        await rejects(session.run(steps), 'DISPOSED', /disposed/);
      } finally {
        gate.restore();
      }
      // the dispose() got in at the run's first turn, and the run took no turn after it: it
      // stopped at that step
      assert.equal(gate.seen.yields, 1, `${how}.dispose(): the run went on for ${gate.seen.yields} turns`);
      assert.equal(session.state, 'disposed');
      rt.dispose();
    }
  });

  test(`defect 14: dispose() stops an in-flight ${backend} execute between its nodes`, async () => {
    const rt = await createRuntime({ backend });
    const graph = chain(1 << 13, 4000, 'gelu'); // about a second of nodes (128 MiB)
    const gate = atFirstYield(() => rt.dispose());
    try {
      await rejects(rt.execute(graph), 'DISPOSED', /disposed/);
    } finally {
      gate.restore();
    }
    assert.equal(gate.seen.yields, 1, `the execute went on for ${gate.seen.yields} turns`);
  });
}
