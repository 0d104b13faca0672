// CI rebuilds kernels.wasm from kernels/wasm/src and requires the committed bytes; a second test
// shows the check really fails when the source changes without a rebuild.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function check(root) {
  return spawnSync('bash', [join(root, 'scripts/build-wasm.sh'), '--check'], { encoding: 'utf8' });
}

test('scripts/build-wasm.sh --check rebuilds kernels.wasm bit-identically', () => {
  const r = check(ROOT);
  assert.equal(r.status, 0, `build check failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /OK, bit-identical/);
  const sums = [...r.stdout.matchAll(/sha256 ([0-9a-f]{64})/g)].map((m) => m[1]);
  assert.equal(sums.length, 2);
  assert.equal(sums[0], sums[1]);
});

test('the check fails when the kernel source changes without a rebuild', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpulab-wasm-'));
  try {
    cpSync(join(ROOT, 'scripts/build-wasm.sh'), join(dir, 'scripts/build-wasm.sh'));
    cpSync(join(ROOT, 'kernels/wasm/src'), join(dir, 'kernels/wasm/src'), { recursive: true });
    cpSync(join(ROOT, 'kernels/kernels.wasm'), join(dir, 'kernels/kernels.wasm'));
    const lib = join(dir, 'kernels/wasm/src/lib.rs');
    writeFileSync(lib, readFileSync(lib, 'utf8').replace(/\n    1\n}/, '\n    2\n}'));
    const r = check(dir);
    assert.equal(r.status, 1, `expected a failed check:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /FAIL, kernels\/kernels.wasm is not the build/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
