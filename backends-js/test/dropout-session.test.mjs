// Dropout in sessions: 5 dropout session steps fed counters 0..4 equal 5 chained executes bit for
// bit, and different counters give different masks, on the node backends (cpu, wasm); the page
// backends run the same check (dropout-session.mjs) in e2e/test_select_sessions.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { dropoutSessionCheck } from './dropout-session.mjs';

for (const backend of ['cpu', 'wasm']) {
  test(`${backend}: 5 dropout session steps (counters 0..4) == 5 chained executes`, async () => {
    const rt = await createRuntime({ backend });
    const r = await dropoutSessionCheck(rt);
    rt.dispose();
    assert.equal(r.backend, backend);
    assert.deepEqual(r.session, r.chained);
    // p = 0.25 keeps about 3/4 of 4096; successive counters change about 3/8 of the mask
    for (const k of r.kept) assert.ok(k > 2900 && k < 3250, `kept ${k}`);
    for (const c of r.changed) assert.ok(c > 1200, `changed ${c}`);
  });
}
