// The conformance corpus (pylib/gpulab/conformance/cases.json) on the wasm backend under node, against
// the JS reference backend: where docs/protocol.md fixes the bits (exact ops, one IEEE float32
// operation, sum/mean in the 64-lane order) both must give identical bits, and both must refuse
// the same graphs with the same code. The float64-reference judgement of every case, with the
// op table's tolerances, is the node-wasm and browser-wasm lanes (e2e/test_wasm_browser.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRuntime } from '../src/runtime.mjs';

const CASES = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/cases.json', import.meta.url), 'utf8'));
const FIXED_BITS = (c) => ['exact', 'arith'].includes(c.tolerance) || ['sum', 'mean'].includes(c.op);
// ops pylib/gpulab/conformance/lanes.json lists for the wasm lane: the backend refuses them (UNSUPPORTED)
const WASM_LACKS = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json',
  import.meta.url), 'utf8')).wasm;
const lacking = (graph) => graph.nodes.some((n) => Object.hasOwn(WASM_LACKS, n.op));

/** @returns {Promise<{code: string}|Record<string, {data: Float32Array}>>} */
async function outputsOf(rt, graph) {
  try {
    return (await rt.execute(graph)).outputs;
  } catch (err) {
    return { code: err.code };
  }
}

// Cases using an op lanes.json lists on wasm are refused there with UNSUPPORTED, as expected.
const LISTED = Object.keys(JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/lanes.json',
  import.meta.url), 'utf8')).wasm).map((entry) => entry.split(':')[0]);
const listed = (c) => c.graph.nodes.some((n) => LISTED.includes(n.op));

const sameValue = (x, y) => (Number.isNaN(x) && Number.isNaN(y)) || Object.is(x, y);

test('corpus: wasm equals the JS reference bit for bit where the protocol fixes the bits', async () => {
  const wasm = await createRuntime({ backend: 'wasm' });
  const cpu = await createRuntime({ backend: 'cpu' });
  const checked = CASES.filter(FIXED_BITS);
  assert.ok(checked.length > 150, `the corpus has ${checked.length} fixed-bit cases`);
  for (const c of checked) {
    if (lacking(c.graph)) {
      assert.equal((await outputsOf(wasm, c.graph)).code, 'UNSUPPORTED', `${c.name}: listed`);
      continue;
    }
    const [got, want] = [await outputsOf(wasm, c.graph), await outputsOf(cpu, c.graph)];
    if (got.code === 'UNSUPPORTED' && listed(c)) continue;
    assert.equal(got.code, want.code, `${c.name}: error code`);
    if (want.code) continue;
    for (const [name, out] of Object.entries(want)) {
      const g = got[name].data;
      const bad = Array.from(out.data).findIndex((v, i) => !sameValue(g[i], v));
      assert.equal(bad, -1, `${c.name} output ${name}[${bad}]: wasm ${g[bad]}, cpu ${out.data[bad]}`);
    }
  }
  wasm.dispose();
  cpu.dispose();
});

test('corpus: every case runs on wasm (or is refused exactly as the JS reference refuses it)', async () => {
  const wasm = await createRuntime({ backend: 'wasm' });
  const cpu = await createRuntime({ backend: 'cpu' });
  for (const c of CASES.filter((x) => !FIXED_BITS(x) && !lacking(x.graph))) {
    const [got, want] = [await outputsOf(wasm, c.graph), await outputsOf(cpu, c.graph)];
    if (got.code === 'UNSUPPORTED' && listed(c)) continue;
    assert.equal(got.code, want.code, `${c.name}: error code`);
    if (want.code) continue;
    for (const [name, out] of Object.entries(want)) {
      assert.equal(got[name].data.length, out.data.length, `${c.name} output ${name}: length`);
    }
  }
  wasm.dispose();
  cpu.dispose();
});
