// Measures the JS cpu and wasm backends' cost per result element of every op, and matmul's
// per flop: the numbers behind the op table's cost_model.
// `node bench/archive/cost_model.mjs [cpu|wasm] [log2 elements]`: one line of JSON per op, ns/element
// (the median of 3 runs of one prepared step, fed once), and the matmul ns/flop.
import { createRuntime } from '../../backends-js/src/runtime.mjs';
import table from '../../backends-js/src/ops.json' with { type: 'json' };

const backend = process.argv[2] ?? 'cpu';
const n = 1 << Number(process.argv[3] ?? 18);
const rt = await createRuntime({ backend });

/** A graph of one node of `op` over n elements (its operands filled), or null. */
function graphOf(op) {
  const row = table.ops[op];
  const full = (id, shape, value = 0.5) => ({ id, op: 'full', shape, value });
  const rows = [n / 256, 256];
  const attrs = {};
  for (const [name, spec] of Object.entries(row.attrs)) {
    if (spec.required) attrs[name] = spec.type === 'float' ? 0.5 : 1;
  }
  if (op === 'life') return [[full(0, rows)], { id: 9, op, a: 0 }];
  if (op === 'adam_update') {
    return [[0, 1, 2].map((i) => full(i, [n])).concat({ id: 3, op: 'full', shape: [], value: 1 }),
      { id: 9, op, a: 0, b: 1, c: 2, t: 3 }];
  }
  if (['softmax', 'log_softmax'].includes(op)) return [[full(0, rows)], { id: 9, op, a: 0 }];
  if (['cross_entropy', 'cross_entropy_grad'].includes(op)) {
    return [[full(0, rows), full(1, rows)], { id: 9, op, a: 0, b: 1 }];
  }
  if (row.family === 'source' || ['transpose', 'permute', 'reshape', 'matmul'].includes(op)) {
    return null;
  }
  const ins = row.operands.map((_, i) => full(i, [n]));
  const node = { id: 9, op, ...attrs };
  row.operands.forEach((name, i) => { node[name] = i; });
  return [ins, node];
}

async function timeGraph(graph) {
  const session = await rt.prepare(graph);
  await session.run(1);
  const times = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await session.run(1);
    times.push(performance.now() - t0);
  }
  session.dispose();
  return times.sort((a, b) => a - b)[1];
}

for (const op of Object.keys(table.ops)) {
  const made = graphOf(op);
  if (!made) continue;
  const [ins, node] = made;
  const graph = { version: 3, nodes: [...ins, node, { id: 10, op: 'sum', a: 9 }],
    outputs: [{ name: 'y', id: 10 }] };
  try {
    const ms = await timeGraph(graph);
    console.log(JSON.stringify({ backend, op, ns_per_element: +(ms * 1e6 / n).toFixed(2) }));
  } catch (err) {
    console.log(JSON.stringify({ backend, op, error: String(err.message ?? err).slice(0, 80) }));
  }
}
const m = 256;
const mm = { version: 1, nodes: [{ id: 0, op: 'full', shape: [m, m], value: 0.5 },
  { id: 1, op: 'matmul', a: 0, b: 0 }], outputs: [{ name: 'y', id: 1 }] };
const ms = await timeGraph(mm);
console.log(JSON.stringify({ backend, op: 'matmul', ns_per_flop: +(ms * 1e6 / (2 * m ** 3)).toFixed(3) }));
rt.dispose();
