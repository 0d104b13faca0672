// One gpu-lab backend on the MLP Adam step: the first losses of a fresh session (for
// agreement), then ms per execute (every output read back), per single-step session run (loss
// read back) and per step at 8 steps per run. Software adapters are allowed and labelled.
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { graphWithBatch } from './fixture.mjs';
import { MIN_RUNS_8, time } from './timing.mjs';

/**
 * @param {string} backend cpu, wasm, webgl2 or webgpu
 * @param {import('./fixture.mjs').Fixture} fx
 * @param {{runs: number, warmup: number, budgetS: number, lossSteps: number}} options
 */
export async function benchGpuLab(backend, fx, options) {
  const rt = await createRuntime({ backend, allowSoftware: true });
  try {
    // Only software renderers get the time budget: they are too slow for every run.
    const opts = { ...options, budgetS: rt.info.software ? options.budgetS : 0 };
    const feed = { [fx.feeds.x]: fx.batch.x, [fx.feeds.y]: fx.batch.y };
    const open = () => rt.prepare(fx.graph, { feeds: [fx.feeds.x, fx.feeds.y], carry: fx.carry,
      outputs: [fx.loss] });
    const losses = await firstLosses(await open(), feed, fx.loss, opts.lossSteps);
    const full = graphWithBatch(fx);
    const execute = await time(() => rt.execute(full), opts);
    const session = await open();
    let run1;
    let run8;
    try {
      run1 = await time(() => session.run([feed]), opts);
      const eight = Array(8).fill(feed);
      run8 = await time(() => session.run(eight), { ...opts, per: 8, minRuns: MIN_RUNS_8 });
    } finally {
      session.dispose();
    }
    return { lib: 'gpu-lab', backend, adapter: describe(rt.info), software: Boolean(rt.info.software),
      info: rt.info, losses, execute, run1, run8 };
  } finally {
    rt.dispose();
  }
}

/** Losses of the first `steps` single-step runs of a fresh session (then disposed). */
async function firstLosses(session, feed, name, steps) {
  try {
    const losses = [];
    for (let s = 0; s < steps; s++) losses.push((await session.run([feed])).outputs[name].data[0]);
    return losses;
  } finally {
    session.dispose();
  }
}

/** @param {{description?: string, vendor?: string, architecture?: string}} info */
function describe(info) {
  return info.description || [info.vendor, info.architecture].filter(Boolean).join(' ') || 'CPU';
}
