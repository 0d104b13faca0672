// The seed example of docs/protocol.md on the CPU backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';

test('the seed graph gives [0, 60, 120] on cpu', async () => {
  const runtime = await createRuntime({ backend: 'cpu' });
  const result = await runtime.execute({
    version: 1,
    nodes: [
      { id: 0, op: 'input', shape: [3], data: [-2, 3, 4] },
      { id: 1, op: 'input', shape: [3], data: [10, 20, 30] },
      { id: 2, op: 'mul', a: 0, b: 1 },
      { id: 3, op: 'relu', a: 2 },
    ],
    outputs: [{ name: 'values', id: 3 }],
  });
  assert.equal(result.backend, 'cpu');
  assert.deepEqual(result.outputs.values.shape, [3]);
  assert.equal(result.outputs.values.dtype, 'float32');
  assert.deepEqual([...result.outputs.values.data], [0, 60, 120]);
  assert.equal(result.stats.version, 1);
  runtime.dispose();
});
