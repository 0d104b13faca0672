#!/usr/bin/env node
// What backends-js's validator makes of each corpus case, for the cross-validator test
// (e2e/test_conformance_cpu.py): reads [{name, graph}] on stdin, writes
// [{name, requiredVersion, order, shapes: {id: shape}} | {name, error: {code, message}}].
import { validateGraph } from '../../../backends-js/src/validate.mjs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const answers = cases.map(({ name, graph }) => {
  try {
    const checked = validateGraph(graph);
    const shapes = Object.fromEntries(checked.nodes.map((n) => [n.id, [...n.shape]]));
    return { name, requiredVersion: checked.requiredVersion, order: checked.order, shapes };
  } catch (err) {
    return { name, error: { code: err.code, message: err.message } };
  }
});
process.stdout.write(JSON.stringify(answers));
