// A WebGPU session run is split into parts whose feeds fit one staging buffer of at most
// MAX_STAGING_BYTES: SwiftShader cannot allocate a buffer of exactly maxBufferSize, and 16 steps
// of 64 MiB feeds split into parts of 4 (256 MiB of staging) poisoned the session. The rule is
// tested on a program stand-in (node has no WebGPU); e2e runs sessions in Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_STAGING_BYTES, WebGpuProgram } from '../src/backends/webgpu/program.mjs';

const MiB = 1024 * 1024;

/** maxStepsPerRun of a program with feeds of these byte sizes on a device of maxBufferSize. */
function stepsPerPart(feedBytes, maxBufferSize) {
  const stand = {
    feedIds: feedBytes.map((_, i) => i),
    slotOfNode: (id) => ({ bytes: feedBytes[id] }),
    ctx: { pool: { maxBufferSize } },
  };
  return WebGpuProgram.prototype.maxStepsPerRun.call(stand);
}

test('a staging buffer never reaches maxBufferSize: 64 MiB feeds go one step per part', () => {
  assert.equal(stepsPerPart([64 * MiB], 256 * MiB), 1);
  assert.ok(stepsPerPart([64 * MiB], 256 * MiB) * 64 * MiB < 256 * MiB);
  assert.equal(stepsPerPart([16 * MiB, 16 * MiB], 256 * MiB), 2);
});

test('parts stay within MAX_STAGING_BYTES and a smaller maxBufferSize', () => {
  assert.equal(MAX_STAGING_BYTES, 64 * MiB);
  assert.equal(stepsPerPart([MiB], 256 * MiB), 64);
  assert.equal(stepsPerPart([MiB], 8 * MiB), 8);
  assert.equal(stepsPerPart([100 * MiB], 256 * MiB), 1); // one step always runs
  assert.equal(stepsPerPart([], 256 * MiB), Infinity); // no feeds: one part
});
