// Compiled student kernels in the page are kept up to MAX_STUDENT_KERNELS per device, least
// recently used dropped first (they were kept forever). build() is replaced here: the cache's
// policy is what is tested (pylib/tests/test_student_kernel_cache.py runs the native twin on a
// device).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_STUDENT_KERNELS, StudentKernels } from '../src/backends/webgpu/student.mjs';

const node = (k) => ({ id: k, operands: [], attrs: { results: [{}], params: {}, source: `kernel ${k}` } });

function counting(max) {
  const kernels = new StudentKernels(/** @type {any} */ (null), max);
  const built = [];
  kernels.build = async (n) => { built.push(n.id); return { id: n.id }; };
  return { kernels, built };
}

test('compiled student kernels are bounded, least recently used dropped first', async () => {
  const { kernels, built } = counting(3);
  for (let k = 0; k < 5; k++) assert.equal((await kernels.get(node(k))).id, k);
  assert.equal(kernels.cache.size, 3); // 2, 3, 4
  await kernels.get(node(2)); // kept, now the newest
  assert.deepEqual(built, [0, 1, 2, 3, 4]);
  await kernels.get(node(5)); // drops 3
  await kernels.get(node(4));
  assert.deepEqual(built, [0, 1, 2, 3, 4, 5]);
  await kernels.get(node(3)); // built again
  assert.deepEqual(built, [0, 1, 2, 3, 4, 5, 3]);
  assert.equal(kernels.cache.size, 3);
});

test('a failed build is forgotten; the default bound is MAX_STUDENT_KERNELS', async () => {
  const kernels = new StudentKernels(/** @type {any} */ (null));
  assert.equal(kernels.max, MAX_STUDENT_KERNELS);
  let fail = true;
  kernels.build = async (n) => { if (fail) throw new Error('compile error'); return { id: n.id }; };
  await assert.rejects(kernels.get(node(1)), /compile error/);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(kernels.cache.size, 0);
  fail = false;
  assert.equal((await kernels.get(node(1))).id, 1);
});
