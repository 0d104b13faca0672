// Every dtype passes through the node backends (cpu, wasm) bit for bit: inputs that are outputs,
// in execute and in sessions (fed, constant, carried, swapped). The browser backends run the
// same check (typed-roundtrip.mjs) in e2e/test_webgl2.py and e2e/test_webgpu.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { typedRoundTrips } from './typed-roundtrip.mjs';

for (const backend of ['cpu', 'wasm']) {
  test(`${backend}: float32, int32, uint32 and bool round trips are exact`, async () => {
    const rt = await createRuntime({ backend });
    try {
      assert.deepEqual(await typedRoundTrips(rt), []);
    } finally {
      rt.dispose();
    }
  });
}

test('an int32 graph with an op that has no int32 kernel is refused before device work', async () => {
  const rt = await createRuntime({ backend: 'cpu' });
  const g = { version: 3, nodes: [{ id: 0, op: 'input', shape: [2], dtype: 'int32', data: [1, 2] },
    { id: 1, op: 'permute', a: 0, dims: [0] }], outputs: [{ name: 'y', id: 1 }] };
  // permute is float32-only in the op table today: the validator refuses it, naming the node
  await assert.rejects(rt.execute(g), { code: 'VALIDATION', node: 1 });
  rt.dispose();
});
