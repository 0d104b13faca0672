// The npm package works when installed (the notebook's observed defect 10, `issues show 12`):
// `npm pack` in backends-js, install the tarball into an empty project with no registry, and run
// the README's JS example there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/** The README's JS example, importing the installed package and pinned to one backend. */
function readmeExample(backend) {
  const block = /```js\n([\s\S]*?)```/.exec(readFileSync(README, 'utf8'));
  assert.ok(block, 'README.md has a ```js example');
  const code = block[1].replace(/from\s+"\.\/backends-js\/src\/runtime\.mjs"/, 'from "gpu-lab"');
  assert.match(code, /from "gpu-lab"/, 'the example imports the runtime');
  assert.match(code, /backend: "auto"/, 'the example picks a backend');
  return code.replace('backend: "auto"', `backend: "${backend}"`) +
    '\nprocess.stdout.write("\\n@@" + JSON.stringify({ backend: r.backend, values: [...r.outputs.values.data] }));\n';
}

const npm = (args, cwd) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'],
  { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('the packed gpu-lab installs offline and runs the README example on wasm', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpulab-pack-'));
  try {
    npm(['pack', '--pack-destination', dir], PACKAGE_DIR);
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const project = join(dir, 'project');
    execFileSync('mkdir', [project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'p', private: true, type: 'module' }));
    npm(['install', '--offline', join(dir, tarball)], project);
    writeFileSync(join(project, 'example.mjs'), readmeExample('wasm'));
    const out = execFileSync(process.execPath, ['example.mjs'], { cwd: project, encoding: 'utf8' });
    const result = JSON.parse(out.slice(out.lastIndexOf('@@') + 2));
    assert.deepEqual(result, { backend: 'wasm', values: [0, 60, 120] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
