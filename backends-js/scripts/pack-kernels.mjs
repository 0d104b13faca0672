// npm pack/publish hooks: copy the kernel files the runtime loads (../kernels/: ops.json,
// kernels.wasm, wgsl/, glsl/) into the package as kernels/ (prepack), and remove that copy
// afterwards (postpack), so git keeps one source. src/kernel-files.mjs finds them in either layout.
import { cpSync, rmSync } from 'node:fs';

const FILES = ['ops.json', 'kernels.wasm', 'wgsl', 'glsl'];
const source = new URL('../../kernels/', import.meta.url);
const target = new URL('../kernels/', import.meta.url);

const step = process.argv[2];
rmSync(target, { recursive: true, force: true });
if (step === 'copy') {
  for (const f of FILES) cpSync(new URL(f, source), new URL(f, target), { recursive: true });
} else if (step !== 'clean') {
  throw new Error(`pack-kernels.mjs: expected "copy" or "clean", got ${step}`);
}
