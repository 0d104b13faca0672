// Live views in node: the colour tables, the presenter registry, Session.advance /
// present on the CPU backend, the animator's checks, its pacing and back-pressure (a fake
// presenter, a page that acknowledges or does not), and the bounded input streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRuntime } from '../src/runtime.mjs';
import { COLOUR_MAP, NAN_COLOUR, PALETTE, colourOf, colouring, fillPixels } from '../src/present/colors.mjs';
import { presenterFor, registerPresenter } from '../src/present/index.mjs';
import { ACK_WAIT_MS, Animation, MAX_UNACKED, checkSpec } from '../../web/animator.mjs';
import { BoundedStream, FeedBuilder, InputStreams, MAX_EVENTS } from '../../web/anim-input.mjs';

const code = (c, pattern = /./) => (err) => {
  assert.equal(err.code, c, err.message);
  assert.match(err.message, pattern);
  return true;
};

/** A 4x4 board with a blinker, its toggle mask fed, carried through life. */
const BLINKER = [0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0];
const LIFE = {
  version: 2,
  nodes: [
    { id: 0, op: 'input', shape: [4, 4], data: BLINKER },
    { id: 1, op: 'input', shape: [4, 4] },
    { id: 2, op: 'input', shape: [2] },
    { id: 3, op: 'add', a: 0, b: 1 },
    { id: 4, op: 'life', a: 3 },
    { id: 5, op: 'sum', a: 0 },
  ],
  outputs: [{ name: 'board', id: 4 }, { name: 'total', id: 5 }],
};

const prepareLife = async (feeds = [1]) => {
  const rt = await createRuntime({ backend: 'cpu' });
  // node 2 (a pointer's [row, col]) is fed or has data
  const nodes = LIFE.nodes.map((n) => (n.id === 2 && !feeds.includes(2) ? { ...n, data: [0, 0] } : n));
  const s = await rt.prepare({ ...LIFE, nodes }, { feeds, carry: { 0: 'board' } });
  return { rt, s };
};

test('colours: palette for masks and integers, the colour map for floats, NaN visible', () => {
  assert.deepEqual(colouring('float32'), { mode: 'map', vmin: 0, vmax: 1 });
  assert.equal(colouring('bool').mode, 'palette');
  assert.equal(colouring('int32').mode, 'palette');
  assert.equal(colouring('float32', { palette: true }).mode, 'palette');
  assert.equal(colouring('int32', { palette: false }).mode, 'map');
  const pal = colouring('bool');
  assert.deepEqual(colourOf(0, pal), PALETTE[0]);
  assert.deepEqual(colourOf(1, pal), PALETTE[1]);
  assert.deepEqual(colourOf(0.6, pal), PALETTE[1]);
  assert.deepEqual(colourOf(99, pal), PALETTE[7]);
  const map = colouring('float32', { vmin: -1, vmax: 1 });
  assert.deepEqual(colourOf(-1, map), COLOUR_MAP[0]);
  assert.deepEqual(colourOf(-5, map), COLOUR_MAP[0]);
  assert.deepEqual(colourOf(0, map), COLOUR_MAP[2]);
  assert.deepEqual(colourOf(1, map), COLOUR_MAP[4]);
  assert.deepEqual(colourOf(NaN, map), [255, 0, 255]);
  const px = fillPixels([0, 1], pal, new Uint8ClampedArray(8));
  assert.deepEqual([...px], [...PALETTE[0], 255, ...PALETTE[1], 255]);
});

test('present.wgsl holds colors.mjs tables (WebGPU, browser and native, draws as the rest)', () => {
  const wgsl = readFileSync(new URL('../src/present/present.wgsl', import.meta.url), 'utf8');
  const table = (name) => {
    const body = wgsl.match(new RegExp(`var<private> ${name}: array<vec3f, \\d+> = array<vec3f, \\d+>\\(([^;]*)\\);`))[1];
    return [...body.matchAll(/vec3f\(([^)]*)\)/g)].map((m) => m[1].split(',').map((x) => Math.round(Number(x) * 255)));
  };
  assert.deepEqual(table('PALETTE'), PALETTE.map((c) => [...c]));
  assert.deepEqual(table('STOPS'), COLOUR_MAP.map((c) => [...c]));
  const nan = wgsl.match(/if \(is_nan\(v\)\) \{ return vec3f\(([^)]*)\); \}/)[1];
  assert.deepEqual(nan.split(',').map((x) => Math.round(Number(x) * 255)), [...NAN_COLOUR]);
  assert.match(wgsl, new RegExp(`let x = t \\* ${COLOUR_MAP.length - 1}\\.0;`));
});

test('presenters are registered per backend; others are UNSUPPORTED', () => {
  for (const b of ['webgpu', 'webgl2', 'wasm', 'cpu']) assert.equal(typeof presenterFor(b).open, 'function');
  assert.throws(() => presenterFor('nope'), code('UNSUPPORTED', /cannot draw a live view.*webgpu/));
});

test('Session.advance steps without reading back; present draws a kept output', async () => {
  const { rt, s } = await prepareLife();
  const zero = new Float32Array(16);
  const stats = await s.advance([{ 1: zero }, { 1: zero }]);
  assert.equal(stats.steps, 2);
  let drawn = null;
  await s.present('board', async (program, id) => { drawn = await program.download(id); });
  assert.deepEqual([...drawn], BLINKER); // two blinker steps: back where it started
  await assert.rejects(s.present('total', async () => {}), code('VALIDATION', /not resident/));
  await assert.rejects(s.present('nope', async () => {}), code('VALIDATION', /no output named/));
  await assert.rejects(s.advance(1), code('VALIDATION', /feed map per step/));
  await assert.rejects(s.present('board', async () => { throw new Error('draw failed'); }),
    code('BACKEND', /draw failed/));
  await assert.rejects(s.advance([{ 1: zero }]), code('STATE', /poisoned/)); // as a failed run
  rt.dispose();
});

test('animate checks: kept 2-D output, every fed input given, feed sizes', async () => {
  const { rt, s } = await prepareLife([1, 2]);
  const spec = (feeds, output = 'board') => ({ output, feeds, fps: 60 });
  const view = checkSpec(s, spec([[1, { kind: 'toggle' }], [2, { kind: 'pointer' }]]));
  assert.deepEqual([view.height, view.width, view.dtype], [4, 4, 'float32']);
  assert.throws(() => checkSpec(s, spec([[1, { kind: 'toggle' }]])), code('VALIDATION', /node 2 is fed/));
  assert.throws(() => checkSpec(s, spec([[1, { kind: 'pointer' }], [2, { kind: 'pointer' }]])),
    code('VALIDATION', /16 elements; a pointer feed needs 2/));
  assert.throws(() => checkSpec(s, spec([[1, { kind: 'toggle' }], [2, { kind: 'toggle' }]])),
    code('VALIDATION', /2 elements; a toggle feed needs 16/));
  assert.throws(() => checkSpec(s, spec([[1, { kind: 'x' }], [2, { kind: 'pointer' }]])),
    code('VALIDATION', /unknown feed kind/));
  assert.throws(() => checkSpec(s, spec([[0, { kind: 'toggle' }], [1, { kind: 'toggle' }],
    [2, { kind: 'pointer' }]])), code('VALIDATION', /node 0 is not a fed input/));
  assert.throws(() => checkSpec(s, spec([], 'total')), code('VALIDATION', /not resident/));
  rt.dispose();
});

/**
 * Virtual time for the animator (its `clock`): timers fire only when the test advances it, so
 * the pacing is checked exactly and a loaded machine cannot make a frame late. The loop sleeps
 * on one timer at a time: a timer pending means the loop is asleep and every frame it was going
 * to make is made. The wall-clock rate is measured by bench/archive/live_views.py.
 */
class VirtualClock {
  constructor() {
    this.t = 0;
    /** @type {Map<number, {at: number, fn: () => void}>} */
    this.timers = new Map();
    this.nextId = 1;
    /** @type {(() => void)|null} */
    this.onSchedule = null;
    this.until = Infinity;
  }

  now() { return this.t; }

  setTimeout(fn, ms) {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + ms, fn });
    this.onSchedule?.();
    return id;
  }

  clearTimeout(id) { this.timers.delete(id); }

  /** Time passing while the loop works (a slow draw). @param {number} ms */
  advance(ms) {
    this.t += ms;
    if (this.t >= this.until) this.onSchedule?.(); // a loop that never sleeps stops the run too
  }

  /** Resolves once the loop sleeps on a timer, has ended, or is past `until`. @param {Promise<void>} ended */
  asleep(ended) {
    if (this.timers.size || this.t >= this.until) return Promise.resolve();
    return Promise.race([ended, new Promise((resolve) => { this.onSchedule = resolve; })]);
  }

  /**
   * Run the loop until virtual time `until`: wait until it sleeps, fire the earliest timer due
   * before `until`, again; then the clock reads `until`. @param {number} until @param {Promise<void>} ended
   */
  async runUntil(until, ended) {
    this.until = until;
    for (;;) {
      await this.asleep(ended);
      const [id, timer] = [...this.timers].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
      if (!timer || timer.at >= until || this.t >= until) break;
      this.timers.delete(id);
      this.t = Math.max(this.t, timer.at);
      timer.fn();
    }
    this.t = Math.max(this.t, until);
  }
}

/**
 * An animation on a fake presenter that counts draws, in virtual time. `acks`: the page
 * acknowledges every frame as it arrives; `drawMs`: virtual time each draw takes. Each posted
 * message is kept with the virtual time it was posted at (`at`).
 */
async function startAnimation({ fps, acks, frames = null, drawMs = 0, pauseKey = ' ' }) {
  const { rt, s } = await prepareLife([1]);
  const clock = new VirtualClock();
  const draws = [];
  registerPresenter('cpu', { open: () => ({ readsBack: true, close() {},
    async draw(program, id) { draws.push(await program.download(id)); clock.advance(drawMs); } }) });
  const posted = [];
  /** @type {() => void} */
  let ended = () => {};
  const endedPromise = new Promise((resolve) => { ended = resolve; });
  /** @type {Animation} */
  let anim;
  const post = (msg) => {
    posted.push({ ...msg, at: clock.now() });
    if (acks && msg.type === 'anim-frame') anim.ack(msg.seq);
  };
  anim = new Animation({ id: 1, cellId: 'c', session: s, post, onEnd: () => ended(), clock,
    spec: { output: 'board', feeds: [[1, { kind: 'toggle' }]], fps, frames, pauseKey } });
  anim.start(/** @type {any} */ ({}));
  const frameTimes = () => posted.filter((m) => m.type === 'anim-frame').map((m) => m.at);
  /** Run the loop for `ms` more virtual time. @param {number} ms */
  const runFor = (ms) => clock.runUntil(clock.t + ms, endedPromise);
  const stop = () => { anim.end('stopped'); rt.dispose(); };
  return { anim, posted, draws, session: s, clock, frameTimes, runFor, stop };
}

test('frames are paced to fps, in order, and the view ends cleanly', async () => {
  const { posted, draws, session, frameTimes, runFor, stop } = await startAnimation({ fps: 25, acks: true });
  await runFor(1000);
  stop();
  // one frame every 40 ms of virtual time: 25 in a second, none early, none skipped
  assert.deepEqual(frameTimes(), Array.from({ length: 25 }, (_, k) => k * 40));
  const frames = posted.filter((m) => m.type === 'anim-frame');
  assert.deepEqual(frames.map((f) => f.seq), frames.map((_, i) => i + 1));
  assert.ok(frames.every((f) => f.unacked <= MAX_UNACKED));
  assert.equal(draws.length, frames.length);
  const end = posted.at(-1);
  assert.equal(end.type, 'anim-end');
  assert.equal(end.reason, 'stopped');
  assert.equal(session.state, 'disposed'); // the view owned the session
});

test('frames slower than fps follow each other without a catch-up burst', async () => {
  // each draw takes 100 ms at 25 fps (40 ms a frame): as fast as the draws allow, never two
  // frames at once to make up the late ones (the loop never sleeps: frames= ends it)
  const { frameTimes, runFor, stop } = await startAnimation({ fps: 25, acks: true, drawMs: 100,
    frames: 10 });
  await runFor(2000); // it ends at its 10th frame
  stop();
  // posted as each draw ends: every frame starts when the one before it ended
  assert.deepEqual(frameTimes(), Array.from({ length: 10 }, (_, k) => (k + 1) * 100));
});

test('a page that stops acknowledging slows the loop to one frame per second', async () => {
  const { anim, frameTimes, runFor, stop } = await startAnimation({ fps: 60, acks: false });
  await runFor(ACK_WAIT_MS * 2.5);
  stop();
  // MAX_UNACKED frames at the frame rate, then one per ACK_WAIT_MS: never a growing queue
  const times = frameTimes();
  assert.equal(times.length, MAX_UNACKED + 2, `frames at ${times}`);
  assert.deepEqual(times.slice(0, MAX_UNACKED), [0, 1000 / 60]);
  const late = times.slice(MAX_UNACKED).map((t, i) => t - times[MAX_UNACKED - 1] - (i + 1) * ACK_WAIT_MS);
  assert.ok(late.every((d) => Math.abs(d) < 1e-9), `frames at ${times}`);
  assert.ok(anim.maxUnacked <= MAX_UNACKED);
});

test('frames= ends the view after that many frames', async () => {
  const { posted, frameTimes, runFor, stop } = await startAnimation({ fps: 60, acks: true, frames: 5 });
  await runFor(1000);
  stop(); // ended already: nothing more is posted
  assert.equal(frameTimes().length, 5);
  assert.equal(posted.at(-1).reason, 'done');
  assert.equal(posted.filter((m) => m.type === 'anim-end').length, 1);
  assert.equal(posted.at(-1).at, frameTimes().at(-1)); // it ended at its last frame
});

test('the pause key pauses: no frame while paused, the next one at once when resumed', async () => {
  const { anim, posted, frameTimes, runFor, stop } = await startAnimation({ fps: 50, acks: true });
  await runFor(200);
  assert.equal(frameTimes().length, 10);
  anim.addInput([{ type: 'keydown', seq: 1, key: ' ' }]);
  assert.deepEqual(posted.at(-1), { type: 'anim-state', animId: 1, paused: true, seq: 10, at: 200 });
  await runFor(3 * ACK_WAIT_MS); // past the paused loop's own wake-ups
  assert.equal(frameTimes().length, 10, 'frames while paused');
  anim.addInput([{ type: 'keydown', seq: 2, key: ' ' }]);
  await runFor(200);
  stop();
  const resumedAt = 200 + 3 * ACK_WAIT_MS;
  assert.ok(posted.some((m) => m.type === 'anim-state' && !m.paused && m.at === resumedAt));
  assert.deepEqual(frameTimes().slice(10), Array.from({ length: 10 }, (_, k) => resumedAt + k * 20));
});

test('input streams keep at most 256 events each, dropping the oldest', () => {
  const s = new BoundedStream();
  for (let i = 0; i < MAX_EVENTS + 10; i++) s.push({ type: 'pointermove', seq: i });
  assert.equal(s.size, MAX_EVENTS);
  assert.equal(s.dropped, 10);
  assert.equal(s.take()[0].seq, 10);
  const all = new InputStreams();
  all.push({ type: 'pointerup', seq: 3 });
  all.push({ type: 'pointerdown', seq: 1 });
  all.push({ type: 'pointermove', seq: 2 });
  for (let i = 0; i < 300; i++) all.push({ type: 'keydown', seq: 10 + i, key: 'a' });
  assert.deepEqual(all.dropped, { pointerdown: 0, pointermove: 0, pointerup: 0, keydown: 44, keyup: 0 });
  assert.deepEqual(all.take().slice(0, 3).map((e) => e.type), ['pointerdown', 'pointermove', 'pointerup']);
  assert.equal(all.size, 0);
});

test('feeds: a cell toggles once per stroke; brush, pointer and key', () => {
  const grid = { height: 4, width: 4 };
  const f = new FeedBuilder(grid, [[1, { kind: 'toggle' }, 16], [2, { kind: 'brush', radius: 1, value: 0.5 }, 16],
    [3, { kind: 'pointer' }, 2], [4, { kind: 'key', key: 'a' }, 1]]);
  const at = (type, seq, row, col) => ({ type, seq, row, col, inside: true });
  const out = f.build([at('pointerdown', 1, 1, 1), at('pointermove', 2, 1, 2), at('pointermove', 3, 1, 1),
    { type: 'keydown', seq: 4, key: 'a' }]);
  assert.deepEqual([...out[1]].map((v, i) => (v ? i : -1)).filter((i) => i >= 0), [5, 6]); // (1,1) once
  assert.equal(out[2][5], 0.5);
  assert.equal(out[2][1], 0.5); // (0,1) within radius 1 of (1,1)
  assert.equal(out[2][15], 0);
  assert.deepEqual([...out[3]], [1, 1]);
  assert.deepEqual([...out[4]], [1]);
  const held = f.build([]); // still pressed, no events: the brush paints where it is
  assert.equal(held[1].reduce((a, b) => a + b, 0), 0);
  assert.equal(held[2][5], 0.5);
  const up = f.build([{ type: 'pointerup', seq: 5, row: 1, col: 1, inside: true }, { type: 'keyup', seq: 6, key: 'a' },
    { type: 'pointermove', seq: 7, row: 0, col: 0, inside: false }]);
  assert.equal(up[2].reduce((a, b) => a + b, 0), 0);
  assert.deepEqual([...up[3]], [-1, -1]);
  assert.deepEqual([...up[4]], [0]);
});
