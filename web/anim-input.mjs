// Input for live views (display.animate): pointer and key events on the canvas, in bounded
// streams, turned into the feeds of the next step. Used on both sides: the page queues events
// until the worker takes a batch, the worker queues them until the next step takes them.
//
// Bounds (docs/playground.md "Live views"): each of the five streams (pointerdown, pointermove,
// pointerup, keydown, keyup) keeps at most MAX_EVENTS undelivered events; past that the
// oldest is dropped and counted. Events carry a sequence number so streams merge in order.

export const MAX_EVENTS = 256;
export const STREAMS = Object.freeze(['pointerdown', 'pointermove', 'pointerup', 'keydown', 'keyup']);

/**
 * One event, coordinates already tensor indices (row, col; inside: on the tensor).
 * @typedef {{type: string, seq: number, row?: number, col?: number, inside?: boolean,
 *   key?: string}} InputEvent
 */

/** A FIFO of at most `limit` events; pushing past it drops the oldest. */
export class BoundedStream {
  /** @param {number} [limit] */
  constructor(limit = MAX_EVENTS) {
    this.limit = limit;
    /** @type {InputEvent[]} */ this.items = [];
    this.dropped = 0;
  }

  /** @param {InputEvent} event */
  push(event) {
    this.items.push(event);
    if (this.items.length > this.limit) {
      this.items.splice(0, this.items.length - this.limit);
      this.dropped += 1;
    }
  }

  /** Everything queued, oldest first; the stream is empty afterwards. */
  take() {
    const out = this.items;
    this.items = [];
    return out;
  }

  get size() { return this.items.length; }
}

/** The five streams of one canvas, bounded each. */
export class InputStreams {
  constructor(limit = MAX_EVENTS) {
    /** @type {Record<string, BoundedStream>} */
    this.streams = Object.fromEntries(STREAMS.map((s) => [s, new BoundedStream(limit)]));
  }

  /** @param {InputEvent} event */
  push(event) {
    this.streams[event.type]?.push(event);
  }

  /** @param {InputEvent[]} events */
  pushAll(events) {
    for (const e of events) this.push(e);
  }

  /** Every queued event of every stream, merged in sequence order. */
  take() {
    return STREAMS.flatMap((s) => this.streams[s].take()).sort((a, b) => a.seq - b.seq);
  }

  get size() { return STREAMS.reduce((n, s) => n + this.streams[s].size, 0); }

  /** Dropped events per stream. @returns {Record<string, number>} */
  get dropped() {
    return Object.fromEntries(STREAMS.map((s) => [s, this.streams[s].dropped]));
  }
}

/**
 * What the student asked to feed (display.toggles(), brush(), pointer(), key(), or data),
 * checked against the fed input's shape.
 * @typedef {{kind: 'toggle'|'brush'|'pointer'|'key'|'pressed'|'const', radius?: number,
 *   value?: number, key?: string, data?: ArrayLike<number>}} FeedSpec
 */

/**
 * The pointer and key state across steps, and each step's feeds from the events it takes.
 * Toggle: a cell toggles once per stroke (down, moves, up), so dragging over it does not
 * flicker. Brush: every cell within `radius` of the pointer while pressed (held still too).
 */
export class FeedBuilder {
  /**
   * @param {{height: number, width: number}} grid the displayed tensor's [height, width]
   * @param {Array<[number, FeedSpec, number]>} feeds [input id, spec, element count]
   */
  constructor(grid, feeds) {
    this.grid = grid;
    this.feeds = feeds;
    this.pressed = false;
    /** @type {Set<number>} cells toggled in the current stroke */
    this.stroke = new Set();
    /** @type {{row: number, col: number, inside: boolean}|null} */
    this.pos = null;
    /** @type {Set<string>} */
    this.keys = new Set();
  }

  /**
   * The feed map of the next step (null when the session has no feeds).
   * @param {InputEvent[]} events this step's events, in order
   * @returns {Record<string, Float32Array|ArrayLike<number>>|null}
   */
  build(events) {
    if (!this.feeds.length) return null;
    /** @type {number[]} */ const toggles = [];
    /** @type {Array<{row: number, col: number}>} */ const centres = [];
    const visit = (e) => {
      if (!e.inside) return;
      const i = e.row * this.grid.width + e.col;
      centres.push({ row: e.row, col: e.col });
      if (!this.stroke.has(i)) { this.stroke.add(i); toggles.push(i); }
    };
    for (const e of events) this.apply(e, visit);
    if (this.pressed && this.pos?.inside && !centres.length) centres.push(this.pos); // held still
    /** @type {Record<string, ArrayLike<number>>} */
    const out = {};
    for (const [id, spec, count] of this.feeds) out[id] = this.value(spec, count, toggles, centres);
    return out;
  }

  /** @param {InputEvent} e @param {(e: InputEvent) => void} visit */
  apply(e, visit) {
    if (e.type === 'keydown') { this.keys.add(e.key ?? ''); return; }
    if (e.type === 'keyup') { this.keys.delete(e.key ?? ''); return; }
    this.pos = { row: e.row ?? -1, col: e.col ?? -1, inside: Boolean(e.inside) };
    if (e.type === 'pointerdown') { this.pressed = true; this.stroke = new Set(); visit(e); }
    else if (e.type === 'pointermove' && this.pressed) visit(e);
    else if (e.type === 'pointerup') { this.pressed = false; this.stroke = new Set(); }
  }

  /**
   * @param {FeedSpec} spec @param {number} count @param {number[]} toggles
   * @param {Array<{row: number, col: number}>} centres
   */
  value(spec, count, toggles, centres) {
    const value = spec.value ?? 1;
    if (spec.kind === 'const') return /** @type {ArrayLike<number>} */ (spec.data);
    if (spec.kind === 'pointer') {
      return Float32Array.of(this.pos?.inside ? this.pos.row : -1, this.pos?.inside ? this.pos.col : -1);
    }
    if (spec.kind === 'key') return Float32Array.of(this.keys.has(spec.key ?? '') ? value : 0);
    if (spec.kind === 'pressed') return Float32Array.of(this.pressed ? value : 0);
    const mask = new Float32Array(count);
    if (spec.kind === 'toggle') {
      for (const i of toggles) mask[i] = mask[i] ? 0 : value;
      return mask;
    }
    paint(mask, this.grid, centres, spec.radius ?? 1, value);
    return mask;
  }
}

/**
 * Set every cell within `radius` (Euclidean, in cells) of a centre to `value`.
 * @param {Float32Array} mask @param {{height: number, width: number}} grid
 * @param {Array<{row: number, col: number}>} centres @param {number} radius @param {number} value
 */
function paint(mask, { height, width }, centres, radius, value) {
  const r = Math.max(0, Math.floor(radius));
  for (const { row, col } of centres) {
    for (let y = Math.max(0, row - r); y <= Math.min(height - 1, row + r); y++) {
      for (let x = Math.max(0, col - r); x <= Math.min(width - 1, col + r); x++) {
        if ((y - row) ** 2 + (x - col) ** 2 <= radius * radius) mask[y * width + x] = value;
      }
    }
  }
}

/** Element counts each feed kind needs (masks: the displayed grid's). */
export const FEED_ELEMENTS = Object.freeze({ pointer: 2, key: 1, pressed: 1 });
