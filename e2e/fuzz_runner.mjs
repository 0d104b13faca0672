#!/usr/bin/env node
// The JS side of the fuzz lane (e2e/fuzz.py): reads a JSON list of graphs on stdin; for each,
// validateGraph's answer and, for a valid graph whose inputs all have data, execute on the cpu
// and wasm backends. Writes [{validate, run?: {cpu, wasm}}]; a thrown value that is not a
// GpuLabError of a known code is reported as {crash} (what the lane looks for).
import { validateGraph } from '../backends-js/src/validate.mjs';
import { createRuntime } from '../backends-js/src/runtime.mjs';
import { ERROR_CODES } from '../backends-js/src/optable.mjs';

const codes = new Set(ERROR_CODES);
const errorView = (err) => (err && err.name === 'GpuLabError' && codes.has(err.code)
  ? { code: err.code, node: err.node ?? null }
  : { crash: String((err && err.stack) || err) });

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const graphs = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const lanes = { cpu: await createRuntime({ backend: 'cpu' }),
  wasm: await createRuntime({ backend: 'wasm' }) };

async function one(graph) {
  let checked;
  try {
    checked = validateGraph(graph);
  } catch (err) {
    return { validate: errorView(err) };
  }
  const validate = { ok: true, required: checked.requiredVersion, order: checked.order,
    shapes: checked.nodes.map((n) => [n.id, n.shape, n.dtype]) };
  if (checked.nodes.some((n) => n.op === 'input' && !n.data)) return { validate };
  const run = {};
  for (const [lane, rt] of Object.entries(lanes)) {
    try {
      const result = await rt.execute(graph);
      run[lane] = { ok: true, outputs: Object.fromEntries(Object.entries(result.outputs)
        .map(([name, v]) => [name, [v.shape, v.dtype]])) };
    } catch (err) {
      run[lane] = errorView(err);
    }
  }
  return { validate, run };
}

const answers = [];
for (const graph of graphs) answers.push(await one(graph));
for (const rt of Object.values(lanes)) rt.dispose();
process.stdout.write(JSON.stringify(answers));
