// Where the webgl2 MLP step's time goes (bench/browser/profile.py serves this page with the
// benchmark's fixture). Three views of one session step:
//  1. GL calls: every WebGL2RenderingContext method the step calls, counted and timed in JS
//     (a prototype wrapper installed before the backend exists). On ANGLE the draws only record
//     commands; the rendering is waited for in the read-back (readPixels), so "readPixels" is
//     where the renderer's work shows up.
//  2. phases: feed uploads, recording the draws, read-back, with performance.now around each.
//  3. per pass: the backend's webgl2Profile hook (a 1-texel read after every draw, so each
//     pass is timed alone; this slows the step down, compare passes with each other).
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { loadFixture } from './fixture.mjs';

const PHASE = {
  texSubImage2D: 'upload', readPixels: 'read-back', drawArrays: 'draw',
  useProgram: 'program switch', bindFramebuffer: 'framebuffer bind',
  framebufferTexture2D: 'framebuffer attach', drawBuffers: 'framebuffer attach',
  bindTexture: 'texture bind', activeTexture: 'texture bind', viewport: 'viewport',
  finish: 'finish', fenceSync: 'fence', clientWaitSync: 'fence',
};

/** Wrap every method of the WebGL2 prototype: counts and JS ms per method while `on`. */
function instrument() {
  const calls = new Map();
  const state = { on: false, calls };
  const proto = WebGL2RenderingContext.prototype;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (!desc || typeof desc.value !== 'function' || name === 'constructor') continue;
    const orig = desc.value;
    proto[name] = function wrapped(...args) {
      if (!state.on) return orig.apply(this, args);
      const t0 = performance.now();
      try {
        return orig.apply(this, args);
      } finally {
        const c = calls.get(name) ?? { n: 0, ms: 0 };
        c.n += 1;
        c.ms += performance.now() - t0;
        calls.set(name, c);
      }
    };
  }
  return state;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const q = new URLSearchParams(location.search);
  const steps = Number(q.get('steps') ?? 10);
  const gl = instrument();
  const fx = await loadFixture('/bench/browser/fixture.json');
  const profile = [];
  const hooks = {};
  const rt = await createRuntime({ backend: 'webgl2', allowSoftware: true, hooks });
  const feed = { [fx.feeds.x]: fx.batch.x, [fx.feeds.y]: fx.batch.y };
  const opts = { feeds: [fx.feeds.x, fx.feeds.y], carry: fx.carry, outputs: [fx.loss] };
  const session = await rt.prepare(fx.graph, opts);
  await session.run([feed]);
  // 1 + 2: GL calls of whole unprofiled steps, and the step's wall time
  const wall = [];
  gl.on = true;
  for (let s = 0; s < steps; s++) {
    const t0 = performance.now();
    await session.run([feed]);
    wall.push(performance.now() - t0);
  }
  gl.on = false;
  const perStep = [...gl.calls].map(([name, c]) => ({ name, phase: PHASE[name] ?? 'other',
    calls: c.n / steps, ms: c.ms / steps })).sort((a, b) => b.ms - a.ms);
  const phases = {};
  for (const c of perStep) phases[c.phase] = (phases[c.phase] ?? 0) + c.ms;
  session.dispose();
  // 3: per pass, min over steps
  hooks.webgl2Profile = profile;
  rt.dispose();
  const rt2 = await createRuntime({ backend: 'webgl2', allowSoftware: true,
    hooks: { webgl2Profile: profile } });
  const s2 = await rt2.prepare(fx.graph, opts);
  await s2.run([feed]);
  const passes = [];
  for (let s = 0; s < Math.min(steps, 5); s++) {
    profile.length = 0;
    await s2.run([feed]);
    profile.forEach((p, i) => {
      passes[i] = passes[i] && passes[i].ms <= p.ms ? passes[i] : { ...p };
    });
  }
  s2.dispose();
  rt2.dispose();
  globalThis.profileResult = { steps, wallMedian: median(wall), wallMin: Math.min(...wall),
    calls: perStep, phases, passes, passSum: passes.reduce((a, p) => a + p.ms, 0),
    userAgent: navigator.userAgent };
  document.getElementById('status').textContent = JSON.stringify(globalThis.profileResult, null, 1);
}

main().catch((err) => {
  globalThis.profileResult = { fatal: String(err?.stack ?? err) };
});
