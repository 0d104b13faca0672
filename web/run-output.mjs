// A run's stdout/stderr on its way from the worker to the page: batched, throttled and capped.
//
// Why: `while True: print(i)` writes ~10^5 lines a second. One message per line floods the
// page (it froze for 20 s, and a click on Stop was handled 14-17 s late), and keeping every
// line grows the page without bound. So writes are batched into at most one message per
// FLUSH_MS, the first HEAD_CHARS characters are forwarded as they come, and past them only the
// last TAIL_CHARS are kept (sent when the run ends) with a count of what was dropped between.
// Pure JS (no DOM, no Pyodide): node tests it directly.

export const HEAD_CHARS = 100_000;
export const TAIL_CHARS = 20_000;
export const FLUSH_MS = 50;
export const DROPPED_MS = 500;

/** @typedef {{stream: 'stdout'|'stderr', text: string}} Segment */
/** @typedef {{segments: Segment[], dropped?: {lines: number, chars: number}, tail?: Segment[],
 *             final?: boolean}} Batch */

/** Append `text` to the last segment if it is the same stream, else start a new one. */
function push(segments, stream, text) {
  const last = segments[segments.length - 1];
  if (last && last.stream === stream) last.text += text;
  else segments.push({ stream, text });
}

function countLines(text) {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n += 1;
  return n;
}

export class RunOutput {
  /**
   * @param {(batch: Batch) => void} send
   * @param {{headChars?: number, tailChars?: number, flushMs?: number, clock?: () => number}} [options]
   */
  constructor(send, { headChars = HEAD_CHARS, tailChars = TAIL_CHARS, flushMs = FLUSH_MS,
    clock = () => performance.now() } = {}) {
    this.send = send;
    this.headLeft = headChars;
    this.tailChars = tailChars;
    this.flushMs = flushMs;
    this.clock = clock;
    /** @type {Segment[]} */ this.pending = [];
    /** @type {Segment[]} */ this.tail = [];
    this.tailLength = 0;
    this.overflowChars = 0; // everything past the head (the tail included)
    this.overflowLines = 0;
    this.lastSent = -Infinity;
    this.lastCount = -Infinity;
    this.ended = false;
  }

  /** Text written by the run (any size); sends a batch when FLUSH_MS passed since the last. */
  write(stream, text) {
    if (this.ended || !text) return;
    if (this.headLeft > 0) {
      const head = text.slice(0, this.headLeft);
      push(this.pending, stream, head);
      this.headLeft -= head.length;
      text = text.slice(head.length);
    }
    if (text) this.overflow(stream, text);
    if (this.clock() - this.lastSent >= this.flushMs) this.flush();
  }

  overflow(stream, text) {
    this.overflowChars += text.length;
    this.overflowLines += countLines(text);
    push(this.tail, stream, text.slice(-this.tailChars));
    this.tailLength += Math.min(text.length, this.tailChars);
    while (this.tailLength > this.tailChars) {
      const first = this.tail[0];
      const cut = Math.min(first.text.length, this.tailLength - this.tailChars);
      first.text = first.text.slice(cut);
      this.tailLength -= cut;
      if (!first.text) this.tail.shift();
    }
  }

  /** Send what is pending now; past the head, only the count dropped so far, and that at
   * most every DROPPED_MS (each update re-lays out a cell holding the whole head). */
  flush() {
    if (this.ended) return;
    const t = this.clock();
    this.lastSent = t;
    const counting = this.overflowChars > 0 && t - this.lastCount >= DROPPED_MS;
    if (!this.pending.length && !counting) return;
    /** @type {Batch} */
    const batch = { segments: this.pending };
    if (this.overflowChars) {
      batch.dropped = { lines: this.overflowLines, chars: this.overflowChars };
      this.lastCount = t;
    }
    this.pending = [];
    this.send(batch);
  }

  /** The run ended: send the rest, the kept tail (from a line start) and the exact drop count. */
  end() {
    if (this.ended) return;
    const batch = /** @type {Batch} */ ({ segments: this.pending, final: true });
    if (this.overflowChars) {
      const tail = this.trimmedTail();
      const keptChars = tail.reduce((n, s) => n + s.text.length, 0);
      const keptLines = tail.reduce((n, s) => n + countLines(s.text), 0);
      batch.tail = tail;
      batch.dropped = { lines: this.overflowLines - keptLines, chars: this.overflowChars - keptChars };
    }
    this.pending = [];
    this.ended = true;
    this.send(batch);
  }

  /** The tail starting at a line boundary (unless it is all one line: a single huge print). */
  trimmedTail() {
    const tail = this.tail.map((s) => ({ ...s }));
    if (this.overflowChars <= this.tailChars) return tail; // nothing was cut from it
    const text = tail.map((s) => s.text).join('');
    const newline = text.indexOf('\n');
    if (newline < 0 || newline === text.length - 1) return tail;
    let cut = newline + 1;
    while (cut > 0 && tail.length) {
      const n = Math.min(cut, tail[0].text.length);
      tail[0].text = tail[0].text.slice(n);
      cut -= n;
      if (!tail[0].text) tail.shift();
    }
    return tail;
  }
}
