// Quotas for untrusted notebooks: device memory, buffers/textures and pipelines a
// runtime may hold, refused with LIMIT before any backend work, on every node backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { QUOTAS, graphCost } from '../src/quotas.mjs';
import { validateGraph } from '../src/validate.mjs';
import { countingRegistry } from './work-counters.mjs';

const MiB = 1024 * 1024;
const chain = (n, ops = ['relu']) => ({ version: 2, nodes: [
  { id: 0, op: 'full', shape: [n], value: 2 },
  ...ops.map((op, i) => ({ id: i + 1, op, a: i }))], outputs: [{ name: 'y', id: ops.length }] });

async function rejects(promise, code, pattern) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

test('quota defaults and bounds: 256 MiB (at most 1.5 GiB), 4096 buffers, 256 pipelines', async () => {
  assert.equal(QUOTAS.memoryBytes.default, 256 * MiB);
  assert.equal(QUOTAS.memoryBytes.max, 1536 * MiB);
  assert.equal(QUOTAS.buffers.default, 4096);
  assert.equal(QUOTAS.pipelines.default, 256);
  const rt = await createRuntime({ backend: 'cpu' });
  assert.deepEqual(rt.quotas.limit, { memoryBytes: 256 * MiB, buffers: 4096, pipelines: 256 });
  rt.dispose();
  for (const quotas of [{ memoryBytes: 2048 * MiB }, { buffers: 4097 }, { pipelines: 0 },
    { memoryBytes: 1.5 }, { frobs: 1 }, 7]) {
    await rejects(createRuntime({ backend: 'cpu', quotas }), 'VALIDATION', /quota/);
  }
  const big = await createRuntime({ backend: 'cpu', quotas: { memoryBytes: 1536 * MiB } });
  assert.equal(big.quotas.limit.memoryBytes, 1536 * MiB);
  big.dispose();
});

test('graphCost: 32-bit words per live node, a buffer each, a pipeline per distinct kernel', () => {
  const checked = validateGraph(chain(10, ['relu', 'exp', 'relu']));
  assert.deepEqual(graphCost(checked), { memoryBytes: 4 * 10 * 4, buffers: 4, pipelines: 2 });
});

for (const backend of ['cpu', 'wasm']) {
  test(`${backend}: each quota refuses with LIMIT before any backend work, naming it`, async () => {
    const { registry, prepared } = countingRegistry();
    const rt = await createRuntime({ backend, quotas: { memoryBytes: 4096, buffers: 3,
      pipelines: 1 }, hooks: { registry } });
    await rejects(rt.execute(chain(600)), 'LIMIT', /4800 bytes of device memory.*quotas\.memoryBytes/);
    await rejects(rt.execute(chain(4, ['relu', 'relu', 'relu'])), 'LIMIT', /quotas\.buffers/);
    await rejects(rt.execute(chain(4, ['relu', 'exp'])), 'LIMIT', /quotas\.pipelines/);
    assert.equal(prepared.count, 0, 'no program was prepared for a refused graph');
    const r = await rt.execute(chain(4));
    assert.equal(prepared.count, 1);
    assert.deepEqual([...r.outputs.y.data], [2, 2, 2, 2]);
    assert.deepEqual(rt.quotas.used, { memoryBytes: 0, buffers: 0, pipelines: 0 });
    rt.dispose();
  });

  test(`${backend}: open sessions hold their share until disposed`, async () => {
    const rt = await createRuntime({ backend, quotas: { memoryBytes: 1000 } });
    const a = await rt.prepare(chain(100)); // 800 bytes
    await rejects(rt.prepare(chain(50)), 'LIMIT', /800 held by open sessions/);
    await rejects(rt.execute(chain(50)), 'LIMIT', /quotas\.memoryBytes/);
    a.dispose();
    const b = await rt.prepare(chain(50));
    assert.deepEqual([...(await b.run(1)).outputs.y.data].slice(0, 2), [2, 2]);
    rt.dispose();
  });

  test(`${backend}: the default memory quota refuses a 2^26-element chain at once`, async () => {
    const { registry, prepared } = countingRegistry();
    const rt = await createRuntime({ backend, hooks: { registry } });
    await rejects(rt.execute(chain(2 ** 26)), 'LIMIT', /268435456\b.*quotas\.memoryBytes/);
    assert.equal(prepared.count, 0, 'refused before any work: no program was prepared');
    assert.deepEqual(rt.quotas.used, { memoryBytes: 0, buffers: 0, pipelines: 0 });
    rt.dispose();
  });
}
