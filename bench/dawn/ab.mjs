// Interleaved A/B rounds of the JS WebGPU backend's run paths on the MLP step:
// one runtime, one session per arm (the arms are backend hooks, read at prepare), each round
// timing every arm's single-step and 8-step runs in a rotated order, so a drifting machine
// hits every arm alike. The arms' last losses must be the same bits: every arm has run the
// same steps on the same feeds (ping-pong and per-step submission change no numbers).
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { MIN_RUNS_8, time } from '/bench/browser/timing.mjs';
import { graphWithBatch } from '/bench/browser/fixture.mjs';

/** The run paths: backend hooks (backends/webgpu.mjs). `new` is the default on hardware
 * (a submission per step, ping-pong); `old` the path before it (one submission, copies). */
export const ARMS = {
  new: {},
  old: { stepsPerSubmit: 0, carryCopies: true },
  'submit-per-step, copies': { carryCopies: true },
  'one submit, ping-pong': { stepsPerSubmit: 0 },
  'submit every 2 steps, ping-pong': { stepsPerSubmit: 2 },
  'submit every 4 steps, ping-pong': { stepsPerSubmit: 4 },
  'submit every 2 steps, feed pairs': { stepsPerSubmit: 2, feedPairs: true },
};

/** The hooks of arm `name` (GPULAB_DAWN_RUN), or VALIDATION-like refusal naming the arms. */
export function armHooks(/** @type {string | undefined} */ name) {
  if (!name) return {};
  const hooks = ARMS[/** @type {keyof typeof ARMS} */ (name)];
  if (!hooks) throw new Error(`unknown run path ${JSON.stringify(name)} (${Object.keys(ARMS).join(', ')})`);
  return { ...hooks };
}

/** @param {{median: number, min: number}} s */
const cell = (s) => `${s.median.toFixed(3)} / ${s.min.toFixed(3)}`;

/**
 * The A/B table, markdown.
 * @param {any} fx the fixture
 * @param {{runs: number, warmup: number, rounds: number, executes?: number}} opts executes:
 *   that many `execute`s of the step first (as the table does before its session runs)
 */
export async function abReport(fx, { runs, warmup, rounds, executes = 0 }) {
  const hooks = /** @type {Record<string, unknown>} */ ({});
  const rt = await createRuntime({ backend: 'webgpu', allowSoftware: true, hooks });
  const feed = { [fx.feeds.x]: fx.batch.x, [fx.feeds.y]: fx.batch.y };
  const names = Object.keys(ARMS);
  const sessions = [];
  try {
    for (const name of names) {
      for (const key of ['stepsPerSubmit', 'carryCopies', 'feedPairs']) delete hooks[key];
      Object.assign(hooks, ARMS[/** @type {keyof typeof ARMS} */ (name)]);
      sessions.push(await rt.prepare(fx.graph, { feeds: [fx.feeds.x, fx.feeds.y],
        carry: fx.carry, outputs: [fx.loss] }));
    }
    const full = graphWithBatch(fx);
    for (let i = 0; i < executes; i++) await rt.execute(full);
    const lines = [`adapter: ${rt.info.description} (${rt.info.software ? 'software' : 'hardware'});` +
      ` ms, median / min of ${runs} runs per cell` +
      (executes ? `; ${executes} executes of the step before the rounds` : ''), '',
    '| round | run path | submits per 8-step run | run (1 step) ms | run (8 steps) ms/step |',
    '| --- | --- | --- | --- | --- |'];
    let agree = true;
    for (let round = 1; round <= rounds; round++) {
      const order = names.map((_, i) => (i + round - 1) % names.length);
      const cells = new Map();
      const losses = new Map();
      for (const i of order) {
        const s = sessions[i];
        const run1 = await time(() => s.run([feed]), { runs, warmup });
        const stats0 = /** @type {any} */ (hooks).webgpuStats().submits;
        const out = await s.run(Array(8).fill(feed));
        const submits = /** @type {any} */ (hooks).webgpuStats().submits - stats0;
        const run8 = await time(() => s.run(Array(8).fill(feed)),
          { runs, warmup, per: 8, minRuns: MIN_RUNS_8 });
        losses.set(i, out.outputs[fx.loss].data[0]);
        cells.set(i, `| ${round} | ${names[i]} | ${submits} | ${cell(run1)} | ${cell(run8)} |`);
      }
      lines.push(...names.map((_, i) => cells.get(i)));
      agree &&= new Set(losses.values()).size === 1;
    }
    lines.push('', `the arms' losses after the same steps: ${agree ? 'the same bits' : 'DIFFER'}`);
    return { text: lines.join('\n'), agree };
  } finally {
    for (const s of sessions) s.dispose();
    rt.dispose();
  }
}
