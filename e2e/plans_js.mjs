#!/usr/bin/env node
// The JS half of e2e/test_plans_equal.py: reads {cases: [{name, graph}], limits: [{...}]} as JSON
// on stdin, validates each graph with validate.mjs, plans it with planner.mjs under every limit
// set, and writes {name: [plan or {error: {code, message}} per limit set]} on stdout.
import { validateGraph } from '../backends-js/src/validate.mjs';
import { planGraph } from '../backends-js/src/planner.mjs';
import { loweredChecked } from '../backends-js/src/lowering.mjs';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** @param {() => unknown} fn */
function attempt(fn) {
  try {
    return fn();
  } catch (err) {
    const e = /** @type {{code?: string, message?: string}} */ (err);
    return { error: { code: e.code ?? 'THROWN', message: String(e.message ?? err) } };
  }
}

async function main() {
  const { cases, limits } = JSON.parse(await readStdin());
  /** @type {Record<string, unknown[]>} */
  const out = {};
  for (const { name, graph } of cases) {
    const checked = attempt(() => validateGraph(graph));
    out[name] = limits.map((/** @type {Record<string, number>} */ lim) => (
      'error' in /** @type {object} */ (checked) ? checked
        : attempt(() => planGraph(/** @type {any} */ (loweredChecked(/** @type {any} */ (checked))), lim))));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(2);
});
