// Live views in the worker (display.animate): a prepared session steps once per frame and one
// kept output is drawn on an OffscreenCanvas the page transferred here, by the backend's
// presenter (backends-js/src/present/): on WebGPU a render pass reads the session's buffer, on
// WebGL2 its texture, on wasm/cpu the values go through putImageData.
//
// Pacing: at most `fps` frames per second, and at most MAX_UNACKED frames the page has not
// acknowledged (it acknowledges in requestAnimationFrame, so the display paces the loop). A page
// that stops acknowledging gets one frame per ACK_WAIT_MS: the loop slows, nothing queues.
// Input arrives in batches (the page sends the next one when this one is acknowledged) into
// bounded streams (anim-input.mjs) that each step drains into its feeds.
import { GpuLabError } from '../backends-js/src/errors.mjs';
import { colouring, presenterFor } from '../backends-js/src/present/index.mjs';
import { FEED_ELEMENTS, FeedBuilder, InputStreams } from './anim-input.mjs';

export const MAX_UNACKED = 2;
export const ACK_WAIT_MS = 1000;
const MAX_FPS = 120;

const invalid = (message, node = null) => new GpuLabError('VALIDATION', message, node);

/**
 * What the loop reads the time from and sleeps with. The worker uses the real one; a test passes
 * virtual time (backends-js/test/present.test.mjs), so pacing is checked exactly, not against a
 * busy machine's wall clock.
 * @typedef {{now: () => number, setTimeout: (fn: () => void, ms: number) => unknown,
 *   clearTimeout: (timer: unknown) => void}} Clock
 * @type {Clock}
 */
export const REAL_CLOCK = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(/** @type {any} */ (timer)),
};

/**
 * What display.animate sends (web/py/animate.py).
 * @typedef {{session: number, output: string, feeds: Array<[number, import('./anim-input.mjs').FeedSpec]>,
 *   fps: number, frames: number|null, palette: boolean|null, vmin: number, vmax: number,
 *   pauseKey: string|null, scale: number|null, name: string, title: string|null}} AnimateSpec
 */

/**
 * The displayed output's [height, width] and each feed's element count, checked against the
 * session's graph: the output kept and 2-D, every fed input given, mask feeds of the grid's size.
 * @param {any} session the runtime session (parts: checked, resolved) @param {AnimateSpec} spec
 */
export function checkSpec(session, spec) {
  const { checked, resolved } = session.parts;
  const id = session.keptOutputId(spec.output, 'animate');
  const node = checked.byId.get(id);
  if (node.shape.length !== 2) {
    throw invalid(`animate: output "${spec.output}" has shape [${node.shape.join(', ')}]; a ` +
      'live view draws a 2-D tensor [height, width]', id);
  }
  const [height, width] = node.shape;
  const given = new Map(spec.feeds.map(([k, v]) => [Number(k), v]));
  for (const fed of resolved.feeds) {
    if (!given.has(fed)) {
      throw invalid(`animate: input node ${fed} is fed every step: give it in feeds= ` +
        '(display.toggles(), brush(), pointer(), key(name) or data)', fed);
    }
  }
  const feeds = [...given].map(([inputId, feed]) => {
    if (!resolved.feeds.includes(inputId)) {
      throw invalid(`animate: node ${inputId} is not a fed input of this session (prepare it ` +
        'with feeds=[...])', inputId);
    }
    const input = checked.byId.get(inputId);
    const count = input.shape.reduce((a, d) => a * d, 1);
    const want = FEED_ELEMENTS[feed.kind] ?? (feed.kind === 'const' ? count : height * width);
    if (!['toggle', 'brush', 'pointer', 'key', 'pressed', 'const'].includes(feed.kind)) {
      throw invalid(`animate: unknown feed kind ${JSON.stringify(feed.kind)} for node ${inputId}`, inputId);
    }
    if (count !== want) {
      throw invalid(`animate: input node ${inputId} has ${count} elements; a ${feed.kind} feed ` +
        `needs ${want} (${feed.kind === 'toggle' || feed.kind === 'brush'
          ? `the drawn output's [${height}, ${width}]` : 'its own size'})`, inputId);
    }
    return /** @type {[number, any, number]} */ ([inputId, feed, count]);
  });
  return { id, height, width, dtype: node.dtype ?? 'float32', feeds };
}

/** A wait that ends after `ms` or at wake(), whichever is first. */
class Waker {
  /** @param {Clock} clock */
  constructor(clock) {
    this.clock = clock;
    /** @type {(() => void)|null} */ this.resolve = null;
  }

  /** @param {number} ms */
  sleep(ms) {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => { this.resolve = null; resolve(); }, Math.max(0, ms));
      this.resolve = () => { this.clock.clearTimeout(timer); this.resolve = null; resolve(); };
    });
  }

  wake() { this.resolve?.(); }
}

export class Animation {
  /**
   * @param {{id: number, cellId: string|number, session: any, spec: AnimateSpec,
   *   post: (msg: any) => void, onEnd: (a: Animation) => void, clock?: Clock}} opts
   */
  constructor({ id, cellId, session, spec, post, onEnd, clock = REAL_CLOCK }) {
    this.id = id;
    this.cellId = cellId;
    this.session = session;
    this.spec = spec;
    this.post = post;
    this.onEnd = onEnd;
    this.clock = clock;
    this.view = checkSpec(session, spec);
    this.fps = Math.min(MAX_FPS, Math.max(1, Number(spec.fps) || 60));
    this.input = new InputStreams();
    this.feeds = new FeedBuilder(this.view, this.view.feeds);
    this.waker = new Waker(clock);
    this.seq = 0;
    this.unacked = 0;
    this.maxUnacked = 0;
    this.paused = false;
    /** @type {'waiting'|'opening'|'running'|'ended'} */
    this.state = 'waiting';
    /** @type {import('../backends-js/src/present/registry.mjs').Surface|null} */
    this.surface = null;
  }

  /** What the page needs to build the canvas. */
  describe() {
    const { height, width } = this.view;
    const scale = this.spec.scale || Math.max(1, Math.min(12, Math.floor(480 / Math.max(width, height))));
    return { animId: this.id, name: this.spec.name, title: this.spec.title, width, height, scale,
      fps: this.fps, frames: this.spec.frames ?? null, pauseKey: this.spec.pauseKey ?? null,
      backend: this.session.backend };
  }

  /** The page's canvas arrived: open the presenter and run the loop. @param {OffscreenCanvas} canvas */
  async start(canvas) {
    if (this.state !== 'waiting') return;
    this.state = 'opening';
    try {
      const { height, width, dtype } = this.view;
      const view = { height, width, dtype, colouring: colouring(dtype, this.spec) };
      const surface = await presenterFor(this.session.backend).open(this.session.parts.program, canvas, view);
      if (this.state !== 'opening') { surface.close(); return; } // ended while opening
      this.surface = surface;
    } catch (err) {
      this.end('error', err);
      return;
    }
    this.state = 'running';
    this.loop().catch((err) => this.end('error', err));
  }

  async loop() {
    const interval = 1000 / this.fps;
    const now = () => this.clock.now();
    let next = now();
    while (this.state === 'running') {
      if (this.paused) { await this.waker.sleep(ACK_WAIT_MS); continue; }
      if (this.unacked >= MAX_UNACKED) { await this.waitForAck(); continue; }
      if (now() < next) { await this.waker.sleep(next - now()); continue; }
      // the next frame is one interval after this one, or after its slot if this one is late:
      // late frames are not made up in a burst (after a pause or an ack wait too)
      next = Math.max(next, now()) + interval;
      await this.frame();
      if (this.spec.frames && this.seq >= this.spec.frames) this.end('done');
    }
  }

  /** Wait for an acknowledgement; after ACK_WAIT_MS count the oldest frame as dropped. */
  async waitForAck() {
    const before = this.unacked;
    await this.waker.sleep(ACK_WAIT_MS);
    if (this.state === 'running' && this.unacked >= before && this.unacked >= MAX_UNACKED) {
      this.unacked = MAX_UNACKED - 1;
    }
  }

  /** One step and its frame. */
  async frame() {
    const now = () => this.clock.now();
    const t0 = now();
    const feeds = this.feeds.build(this.input.take());
    await this.session.advance(feeds ? [feeds] : 1);
    const t1 = now();
    if (this.state !== 'running') return;
    await this.session.present(this.spec.output, (program, id) => this.surface.draw(program, id));
    const t2 = now();
    this.seq += 1;
    this.unacked += 1;
    this.maxUnacked = Math.max(this.maxUnacked, this.unacked);
    this.post({ type: 'anim-frame', animId: this.id, seq: this.seq, stepMs: t1 - t0,
      presentMs: t2 - t1, startedAt: performance.timeOrigin + t0,
      doneAt: performance.timeOrigin + t2, unacked: this.unacked });
  }

  /** @param {number} seq */
  ack(seq) {
    if (seq > this.seq) return;
    this.unacked = Math.max(0, Math.min(this.unacked, this.seq - seq));
    this.waker.wake();
  }

  /** A batch of page events: queued for the next step; the pause key acts now. */
  addInput(events) {
    for (const e of events) {
      if (e.type === 'keydown' && this.spec.pauseKey && e.key === this.spec.pauseKey) {
        this.paused = !this.paused;
        this.post({ type: 'anim-state', animId: this.id, paused: this.paused, seq: this.seq });
        continue;
      }
      this.input.push(e);
    }
    this.waker.wake();
  }

  /**
   * End once: the surface closed, the canvas let go, the session disposed (the animation owns
   * it), and the page told why. @param {'done'|'stopped'|'error'} reason @param {unknown} [err]
   */
  end(reason, err = null) {
    if (this.state === 'ended') return;
    this.state = 'ended';
    this.waker.wake();
    try { this.surface?.close(); } catch { /* a lost device: nothing to release */ }
    this.surface = null;
    try { this.session.dispose(); } catch { /* disposed already */ }
    const message = err ? `${err?.code ? `${err.code}: ` : ''}${err?.message ?? err}` : null;
    this.post({ type: 'anim-end', animId: this.id, reason, message, frames: this.seq,
      maxUnacked: this.maxUnacked, dropped: this.input.dropped });
    this.onEnd(this);
  }
}

/** Every live view of the worker, by id. */
export class Animations {
  /** @param {(msg: any) => void} post */
  constructor(post) {
    this.post = post;
    /** @type {Map<number, Animation>} */
    this.live = new Map();
    this.nextId = 1;
  }

  /** Check and register a view; its loop starts when the page's canvas arrives. */
  create(cellId, session, spec) {
    const anim = new Animation({ id: this.nextId++, cellId, session, spec, post: this.post,
      onEnd: (a) => this.live.delete(a.id) });
    this.live.set(anim.id, anim);
    return anim;
  }

  /** A page message about a view (canvas, ack, input, stop). */
  handle(msg) {
    const anim = this.live.get(msg.animId);
    if (msg.type === 'anim-stop') { this.stop(msg); return; }
    if (!anim) return;
    if (msg.type === 'anim-canvas') anim.start(msg.canvas);
    else if (msg.type === 'anim-ack') anim.ack(msg.seq);
    else if (msg.type === 'anim-input') {
      anim.addInput(msg.events ?? []);
      this.post({ type: 'anim-input-ack', animId: anim.id });
    }
  }

  /** Stop one view (animId), a cell's (cellId), or all. */
  stop({ animId = null, cellId = null, all = false } = {}) {
    for (const anim of [...this.live.values()]) {
      if (all || anim.id === animId || (cellId !== null && anim.cellId === cellId)) anim.end('stopped');
    }
  }
}
