// Live views on the page (display.animate): the cell's canvas, handed to the worker as an
// OffscreenCanvas (the worker's presenter draws on it: no pixels cross the message channel),
// frames acknowledged in requestAnimationFrame (the worker keeps at most 2 unacknowledged, so
// the display paces it), pointer and key events on the canvas mapped to tensor indices and
// sent in bounded batches (anim-input.mjs), and the view's end (done, Stop, re-run, an error).
import { el } from './render.mjs';
import { InputStreams } from './anim-input.mjs';

/** Frames remembered per view for the tests and the caption's rate (the last ones). */
const LOG_FRAMES = 600;
/** Frames kept waiting for an animation frame (a hidden tab runs none): past it the oldest is
 * dropped, so a page that does not acknowledge holds no growing queue. */
const MAX_PENDING = 4;
const PAST_LOGS = 32;

/**
 * @typedef {{animId: number, name: string, title: string|null, width: number, height: number,
 *   scale: number, fps: number, frames: number|null, pauseKey: string|null, backend: string}} ViewInfo
 */

class LiveView {
  /** @param {any} cell @param {ViewInfo} info @param {(msg: any, transfer?: any[]) => void} post */
  constructor(cell, info, post) {
    this.cell = cell;
    this.info = info;
    this.post = post;
    this.input = new InputStreams();
    this.inputInFlight = false;
    this.nextSeq = 1;
    /** @type {any[]} frames received, not yet acknowledged (the newest is what is shown) */
    this.pending = [];
    // states: the worker's frame count at each pause and resume ({paused, seq}), so a test
    // counts the frames made while paused instead of timing a quiet spell
    this.log = { seqs: [], shownAt: [], latencyMs: [], stepMs: [], presentMs: [], outOfOrder: 0,
      maxUnacked: 0, received: 0, lastReceived: 0, droppedFrames: 0, paused: false, states: [],
      ended: null };
    this.canvas = el('canvas', { width: info.width, height: info.height, tabIndex: 0, role: 'img',
      'aria-label': `live view ${info.name}: ${info.title ?? `${info.height}×${info.width}`}` });
    this.canvas.style.width = `${info.width * info.scale}px`;
    this.canvas.style.height = `${info.height * info.scale}px`;
    this.caption = el('figcaption');
    this.figure = el('figure', { class: 'drawing live-view', 'data-anim-id': String(info.animId),
      'data-state': 'running', 'data-frames': '0' }, [this.canvas, this.caption]);
    cell.output.append(this.figure);
    this.listen();
    this.caption.textContent = this.describe();
    const offscreen = this.canvas.transferControlToOffscreen();
    post({ type: 'anim-canvas', animId: info.animId, canvas: offscreen }, [offscreen]);
  }

  describe(extra = '') {
    const { info, log } = this;
    const pause = info.pauseKey ? `, ${keyName(info.pauseKey)} pauses` : '';
    const state = log.paused ? ' — paused' : '';
    return `${info.title ?? info.name} — frame ${log.seqs.at(-1) ?? 0}, ${this.rate().toFixed(0)} ` +
      `fps on ${info.backend}${pause}${state}${extra}`;
  }

  /** Frames per second over the last second of shown frames. */
  rate() {
    const t = this.log.shownAt;
    if (t.length < 2) return 0;
    const last = t[t.length - 1];
    const recent = t.filter((x) => x > last - 1000);
    return recent.length > 1 ? ((recent.length - 1) * 1000) / (last - recent[0]) : 0;
  }

  listen() {
    const c = this.canvas;
    this.handlers = {
      pointerdown: (e) => { c.setPointerCapture?.(e.pointerId); c.focus(); this.pointer('pointerdown', e); },
      pointermove: (e) => this.pointer('pointermove', e),
      pointerup: (e) => this.pointer('pointerup', e),
      keydown: (e) => this.key('keydown', e),
      keyup: (e) => this.key('keyup', e),
    };
    for (const [type, fn] of Object.entries(this.handlers)) c.addEventListener(type, fn);
  }

  /** Pointer position -> tensor indices (row, col) of the cell under it. */
  pointer(type, e) {
    const c = this.canvas;
    const rect = c.getBoundingClientRect(); // the border box: the content starts at clientLeft
    const x = (e.clientX - rect.left - c.clientLeft) / c.clientWidth;
    const y = (e.clientY - rect.top - c.clientTop) / c.clientHeight;
    const inside = x >= 0 && x < 1 && y >= 0 && y < 1;
    const col = Math.min(this.info.width - 1, Math.max(0, Math.floor(x * this.info.width)));
    const row = Math.min(this.info.height - 1, Math.max(0, Math.floor(y * this.info.height)));
    this.input.push({ type, seq: this.nextSeq++, row, col, inside });
    e.preventDefault();
  }

  key(type, e) {
    if (e.repeat) return;
    this.input.push({ type, seq: this.nextSeq++, key: e.key });
    if (e.key === ' ' || e.key.startsWith('Arrow')) e.preventDefault(); // not a page scroll
  }

  /** A frame from the worker: shown now, acknowledged at the next animation frame. */
  onFrame(msg) {
    if (msg.seq !== this.log.lastReceived + 1) this.log.outOfOrder += 1;
    this.log.lastReceived = msg.seq;
    this.log.received += 1;
    // the worker's count of frames the page had not acknowledged, for every frame (a page that
    // holds its acknowledgements drops some unshown: they count too)
    this.log.maxUnacked = Math.max(this.log.maxUnacked, msg.unacked);
    this.pending.push(msg);
    if (this.pending.length > MAX_PENDING) {
      this.pending.shift();
      this.log.droppedFrames += 1;
    }
  }

  /** requestAnimationFrame: acknowledge what arrived, send queued input. */
  tick(time) {
    if (this.pending.length && !this.holdAcks()) {
      const at = performance.timeOrigin + performance.now();
      for (const f of this.pending) {
        push(this.log.seqs, f.seq);
        push(this.log.shownAt, time);
        push(this.log.latencyMs, at - f.startedAt);
        push(this.log.stepMs, f.stepMs);
        push(this.log.presentMs, f.presentMs);
      }
      const newest = this.pending.at(-1).seq;
      this.pending = [];
      this.post({ type: 'anim-ack', animId: this.info.animId, seq: newest });
      this.figure.dataset.frames = String(newest);
      this.caption.textContent = this.describe();
    }
    if (!this.inputInFlight && this.input.size && !this.log.ended) {
      this.inputInFlight = true;
      this.post({ type: 'anim-input', animId: this.info.animId, events: this.input.take() });
    }
  }

  holdAcks() { return Boolean(globalThis.gpulabAnimations?.holdAcks); }

  onState(msg) {
    this.log.paused = msg.paused;
    push(this.log.states, { paused: msg.paused, seq: msg.seq });
    this.figure.dataset.paused = String(msg.paused);
    this.caption.textContent = this.describe();
  }

  /** The worker ended the view (or the page did): the canvas stays with the last frame. */
  onEnd({ reason, message, frames, maxUnacked, dropped }) {
    if (this.log.ended) return;
    this.log.ended = { reason, message, frames, maxUnacked, dropped };
    for (const [type, fn] of Object.entries(this.handlers)) this.canvas.removeEventListener(type, fn);
    this.figure.dataset.state = 'ended';
    this.figure.dataset.reason = reason;
    const why = { done: 'ended', stopped: 'stopped', error: 'ended by an error', gone: 'ended' }[reason] ?? reason;
    this.caption.textContent = `${this.info.title ?? this.info.name} — ${why} after ${frames ?? 0} frames`;
    if (message) this.figure.append(el('p', { class: 'error', role: 'alert', text: message }));
  }
}

/** @param {number[]} list @param {number} value */
function push(list, value) {
  list.push(value);
  if (list.length > LOG_FRAMES) list.shift();
}

const keyName = (key) => (key === ' ' ? 'Space' : key);

/**
 * The page's live views. `post` sends to the current worker.
 * @param {() => Worker} worker
 */
export function createLiveViews(worker) {
  /** @type {Map<number, LiveView>} */
  const views = new Map();
  /** Logs of views whose cell was cleared (the last PAST_LOGS), for the tests. */
  const past = new Map();
  const post = (msg, transfer = []) => worker().postMessage(msg, transfer);
  const loop = (time) => {
    for (const [id, v] of views) {
      if (v.log.ended && !v.figure.isConnected) { // its cell was cleared: keep only the log
        views.delete(id);
        past.set(id, v.log);
        if (past.size > PAST_LOGS) past.delete(past.keys().next().value);
      } else v.tick(time);
    }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
  const running = () => [...views.values()].filter((v) => !v.log.ended);
  const api = {
    /** display.animate's output in a cell. @param {any} cell @param {ViewInfo} info */
    start(cell, info) { views.set(info.animId, new LiveView(cell, info, post)); },
    /** Worker messages: anim-frame, anim-state, anim-input-ack, anim-end. */
    message(msg) {
      const view = views.get(msg.animId);
      if (!view) return;
      if (msg.type === 'anim-frame') view.onFrame(msg);
      else if (msg.type === 'anim-state') view.onState(msg);
      else if (msg.type === 'anim-input-ack') view.inputInFlight = false;
      else if (msg.type === 'anim-end') view.onEnd(msg);
    },
    /** Stop every running view (the toolbar's Stop). */
    stopAll() { if (running().length) post({ type: 'anim-stop', all: true }); },
    /** A cell runs again: end its views now (the worker ends them too when the run starts). */
    endCell(cell) {
      for (const v of running()) {
        if (v.cell === cell) post({ type: 'anim-stop', animId: v.info.animId });
      }
    },
    /** The worker is gone (Restart Python): its views end where they are. */
    workerGone() {
      for (const v of running()) v.onEnd({ reason: 'gone', message: 'Python was restarted', frames: v.log.seqs.at(-1) });
    },
    get running() { return running().length; },
    /** For tests: a view's frame log by id. */
    log: (id) => views.get(id)?.log ?? past.get(id) ?? null,
    holdAcks: false,
  };
  return api;
}
