#!/usr/bin/env node
// The dtype each node's kernel is chosen by, as the JS backends' registry sees it
// (backends-js/src/kernels.mjs kernelDtype on the validator's dtypes), for the twin test of
// pylib/gpulab/conformance/lanes.py kernel_dtype (e2e/test_conformance_lanes.py): reads [{name, graph}]
// on stdin, writes [{name, dtypes: {id: dtype}} | {name, error: {code, message}}].
import { validateGraph } from '../../../backends-js/src/validate.mjs';
import { kernelDtype } from '../../../backends-js/src/kernels.mjs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const answers = cases.map(({ name, graph }) => {
  try {
    const checked = validateGraph(graph);
    const dtypes = Object.fromEntries(checked.nodes.map((n) => [n.id, kernelDtype(n, checked)]));
    return { name, dtypes };
  } catch (err) {
    return { name, error: { code: err.code, message: err.message } };
  }
});
process.stdout.write(JSON.stringify(answers));
