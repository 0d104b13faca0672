// The profile of bench/dawn/mlp.mjs --profile: the MLP step's single-step and 8-step session
// runs, each measured run's WebGPU calls counted and timed (profile.mjs) and its compute
// passes timestamped on the GPU; printed as markdown, per session step.
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { timeProgramRun } from './profile.mjs';

/** @param {number[]} xs @returns {number} */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Time `runs` session runs of `steps` steps under the profile (after `warmup` unprofiled).
 * @param {import('./profile.mjs').Profile} profile @param {any} session
 * @param {Map<number, Float32Array> | object} feed @param {number} steps
 * @param {{runs: number, warmup: number}} opts
 */
async function profileRuns(profile, session, feed, steps, { runs, warmup }) {
  const arg = Array(steps).fill(feed);
  for (let i = 0; i < warmup; i++) await session.run(arg);
  // the wrappers installed but off: the plain wall time to read the profiled one against
  const plain = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await session.run(arg);
    plain.push(performance.now() - t0);
  }
  profile.start(); // one profiled run untimed: the timestamp query set is made in it
  await session.run(arg);
  await profile.stop();
  const windows = [];
  for (let i = 0; i < runs; i++) {
    profile.start();
    const t0 = performance.now();
    await session.run(arg);
    const wall = performance.now() - t0;
    const w = await profile.stop();
    windows.push({ ...w, wall });
  }
  return { windows, plain };
}

/** GPU figures of one window, µs (null when no timestamp was written): pass time summed, and first pass begin to last pass end. */
function gpuOf(/** @type {{passes: Array<[bigint, bigint]>}} */ w) {
  const ok = w.passes.filter(([b, e]) => e >= b && b > 0n);
  if (!ok.length) return null;
  const busy = ok.reduce((s, [b, e]) => s + Number(e - b), 0) / 1000;
  const span = Number(ok[ok.length - 1][1] - ok[0][0]) / 1000;
  return { passes: ok.length, busy, span };
}

/**
 * Markdown rows for one mode, µs per step as medians over the runs: each call's time and
 * count, the program's own JS (program.run less the calls in it and the map wait), the
 * session's (wall less program.run), the GPU's pass times.
 * @param {string} mode @param {number} steps @param {{windows: any[], plain: number[]}} r
 */
function rows(mode, steps, { windows, plain }) {
  const names = [...new Set(windows.flatMap((w) => Object.keys(w.ms)))].sort();
  const per = (/** @type {number} */ ms) => ((ms * 1000) / steps).toFixed(1);
  const med = (/** @type {(w: any) => number} */ f) => median(windows.map(f));
  const ms = (/** @type {any} */ w, /** @type {string} */ name) => w.ms[name] ?? 0;
  const calls = (/** @type {any} */ w) => Object.keys(w.ms)
    .filter((k) => k !== 'program.run (all)' && !k.includes('(wait'))
    .reduce((sum, k) => sum + w.ms[k], 0);
  const out = [
    `| ${mode}: wall, not profiled (median / min) | ${per(median(plain))} / ` +
      `${per(Math.min(...plain))} | |`,
    `| ${mode}: wall, profiled | ${per(med((w) => w.wall))} | |`,
  ];
  for (const name of names) {
    if (name === 'program.run (all)') continue;
    const count = med((w) => w.calls[name] ?? 0) / steps;
    out.push(`| ${mode}: ${name} | ${per(med((w) => ms(w, name)))} | ${count.toFixed(2)} |`);
  }
  out.push(`| ${mode}: WebGPU calls, all but the waits | ${per(med(calls))} | |`);
  out.push(`| ${mode}: program.run less the calls and the map wait (JS, error-scope waits) | ` +
    `${per(med((w) => ms(w, 'program.run (all)') - calls(w) - ms(w, 'mapAsync (wait)')))} | |`);
  out.push(`| ${mode}: session JS (wall - program.run) | ` +
    `${per(med((w) => w.wall - ms(w, 'program.run (all)')))} | |`);
  const gpu = windows.map(gpuOf).filter(Boolean);
  if (gpu.length) {
    const perUs = (/** @type {number} */ us) => (us / steps).toFixed(1);
    out.push(`| ${mode}: GPU, compute passes busy (timestamps) | ` +
      `${perUs(median(gpu.map((g) => g.busy)))} | ${(gpu[0].passes / steps).toFixed(2)} |`);
    out.push(`| ${mode}: GPU, first pass begin to last pass end | ` +
      `${perUs(median(gpu.map((g) => g.span)))} | |`);
  }
  return out;
}

/**
 * The profile report of the fixture's step on the webgpu backend.
 * @param {import('./profile.mjs').Profile} profile @param {any} fx the fixture
 * @param {{runs: number, warmup: number, hooks?: object}} opts
 */
export async function profileReport(profile, fx, opts) {
  const rt = await createRuntime({ backend: 'webgpu', allowSoftware: true, hooks: opts.hooks });
  const lines = [];
  try {
    const feed = { [fx.feeds.x]: fx.batch.x, [fx.feeds.y]: fx.batch.y };
    const session = await rt.prepare(fx.graph, { feeds: [fx.feeds.x, fx.feeds.y],
      carry: fx.carry, outputs: [fx.loss] });
    timeProgramRun(session, profile);
    try {
      const one = await profileRuns(profile, session, feed, 1, opts);
      const eight = await profileRuns(profile, session, feed, 8, opts);
      lines.push(`adapter: ${rt.info.description} (${rt.info.software ? 'software' : 'hardware'});` +
        ` ${opts.runs} profiled runs each; µs per session step, medians over the runs`);
      if (profile.notes.length) lines.push(`notes: ${[...new Set(profile.notes)].join('; ')}`);
      lines.push('', '| phase | µs per step | calls per step |', '| --- | --- | --- |');
      lines.push(...rows('1 step', 1, one), ...rows('8 steps', 8, eight));
    } finally {
      session.dispose();
    }
  } finally {
    rt.dispose();
  }
  return lines.join('\n');
}
