// The MLP Adam step benchmark of the browser page (bench/browser/gpulab-lane.mjs, unchanged) on
// the JS WebGPU backend under node + Dawn: execute (every output read back), a single-step
// session run, and 8 steps per run (ms per step), median / min; plus the first losses.
//   python3 -c 'import json; from gpulab.benchmarks.browser import fixture; \
//     print(json.dumps(fixture(0)))' > /tmp/mlp_fixture.json
//   GPULAB_DAWN=<webgpu package>/index.js node --import ./pylib/gpulab/conformance/dawn_setup.mjs \
//     bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json --runs 50 [--json out.json]
// With --profile N instead: N profiled single-step and 8-step runs (bench/dawn/profile.mjs:
// each WebGPU call counted and timed on the host, each compute pass timestamped on the GPU
// where Dawn offers "timestamp-query"), a table of µs per step. Profiling wraps the API, so it
// is its own process, never mixed with the timed table. GPULAB_DAWN_RUN=<arm> profiles one of
// bench/dawn/ab.mjs's run paths (e.g. old) instead of the default; GPULAB_DAWN_TIMESTAMPS=0
// leaves the passes without timestamps (host figures only).
// With --ab: the run paths (ab.mjs: per-step submission, carry ping-pong, both, neither) in
// --rounds interleaved rounds of --runs runs each; exit status 1 if their losses differ;
// --execute-first N runs N executes of the step before the rounds (as the table does).
// Exit status 1 when the adapter is a software one (this lane is for hardware GPUs).
import { writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadFixture } from '/bench/browser/fixture.mjs';
import { benchGpuLab } from '/bench/browser/gpulab-lane.mjs';

const { values } = parseArgs({ options: {
  fixture: { type: 'string', default: '/tmp/mlp_fixture.json' },
  runs: { type: 'string', default: '50' },
  warmup: { type: 'string', default: '3' },
  losses: { type: 'string', default: '5' },
  json: { type: 'string' },
  profile: { type: 'string' },
  ab: { type: 'boolean', default: false },
  rounds: { type: 'string', default: '3' },
  'execute-first': { type: 'string', default: '0' },
} });

/** @param {{median: number, min: number, n: number}} s */
const cell = (s) => `${s.median.toFixed(3)} / ${s.min.toFixed(3)} (${s.n})`;

/** The --profile mode: wrappers installed before the backend opens its device. */
async function profileMain() {
  const { installProfile } = await import('./profile.mjs');
  const profile = installProfile({ timestamps: process.env.GPULAB_DAWN_TIMESTAMPS !== '0' });
  const { profileReport } = await import('./profile-report.mjs');
  const { armHooks } = await import('./ab.mjs');
  const fx = await loadFixture(pathToFileURL(values.fixture).href);
  const arm = process.env.GPULAB_DAWN_RUN;
  console.log(`run path: ${arm || 'the default'}`);
  console.log(await profileReport(profile, fx, { runs: Number(values.profile),
    warmup: Number(values.warmup), hooks: armHooks(arm) }));
  return 0;
}

/** The --ab mode: interleaved rounds of the run paths. */
async function abMain() {
  const { abReport } = await import('./ab.mjs');
  const fx = await loadFixture(pathToFileURL(values.fixture).href);
  const { text, agree } = await abReport(fx, { runs: Number(values.runs),
    warmup: Number(values.warmup), rounds: Number(values.rounds),
    executes: Number(values['execute-first']) });
  console.log(text);
  return agree ? 0 : 1;
}

async function main() {
  if (values.profile) return profileMain();
  if (values.ab) return abMain();
  const fx = await loadFixture(pathToFileURL(values.fixture).href);
  const result = await benchGpuLab('webgpu', fx, { runs: Number(values.runs),
    warmup: Number(values.warmup), budgetS: 0, lossSteps: Number(values.losses) });
  const dawn = process.env.GPULAB_DAWN ?? 'webgpu';
  console.log(`node ${process.version}, Dawn from ${dawn}; adapter: ${result.adapter}` +
    ` (${result.software ? 'software' : 'hardware'})`);
  console.log('| backend | execute ms | run (1 step) ms | run (8 steps) ms/step | losses |');
  console.log('| --- | --- | --- | --- | --- |');
  console.log(`| gpu-lab webgpu (node + Dawn) | ${cell(result.execute)} | ${cell(result.run1)} | ` +
    `${cell(result.run8)} | ${result.losses.map((l) => l.toFixed(7)).join(', ')} |`);
  if (values.json) {
    await writeFile(values.json, JSON.stringify({ node: process.version, dawn, ...result }, null, 1));
  }
  return result.software ? 1 : 0;
}

// dawn.node can keep the event loop alive after the device is gone: exit explicitly.
main().then((code) => process.exit(code), (err) => {
  console.error(err?.stack ?? err);
  process.exit(2);
});
