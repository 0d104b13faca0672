// GPU buffers pooled by (usage, size class) across programs: `execute` is prepare + run +
// dispose, so without a pool every execute would allocate (and the browser would free lazily).
import { GpuLabError } from '../../errors.mjs';

/** Free buffers kept for reuse, in bytes, before the oldest ones are destroyed. */
const DEFAULT_MAX_FREE_BYTES = 256 * 1024 * 1024;

/**
 * Round a byte count up to its size class: 256-byte steps up to 64 KiB, then eight classes per
 * power of two (at most 12.5% slack), so slightly different graphs still share buffers.
 * @param {number} bytes
 */
export function sizeClass(bytes) {
  const n = Math.max(4, Math.ceil(bytes));
  if (n <= 65536) return Math.ceil(n / 256) * 256;
  const step = 2 ** (Math.floor(Math.log2(n)) - 3);
  return Math.ceil(n / step) * step;
}

export class BufferPool {
  /**
   * @param {GPUDevice} device
   * @param {{maxFreeBytes?: number, maxBufferSize?: number}} [opts] maxBufferSize: a test
   *   hook's lower limit (hooks.maxBufferSize), enforced here as the device would
   */
  constructor(device, { maxFreeBytes = DEFAULT_MAX_FREE_BYTES, maxBufferSize } = {}) {
    this.device = device;
    /** a size class never goes past what the device can allocate */
    this.maxBufferSize = Math.min(device.limits.maxBufferSize, maxBufferSize ?? Infinity);
    this.maxFreeBytes = maxFreeBytes;
    /** @type {Map<string, GPUBuffer[]>} free buffers by key */
    this.free = new Map();
    /** @type {Set<GPUBuffer>} free buffers, oldest release first (a Set: O(1) removal) */
    this.freeOrder = new Set();
    this.freeBytes = 0;
    this.live = 0; // created and not destroyed (in use + free)
    this.liveBytes = 0;
    this.created = 0;
    this.reused = 0;
  }

  /**
   * A buffer of at least `bytes` with exactly `usage`.
   * @param {number} usage GPUBufferUsage flags
   * @param {number} bytes
   * @param {string} [label]
   * @returns {GPUBuffer}
   */
  acquire(usage, bytes, label = 'gpu-lab') {
    const size = Math.max(Math.ceil(bytes / 4) * 4, Math.min(sizeClass(bytes), this.maxBufferSize));
    const list = this.free.get(key(usage, size));
    if (list && list.length) {
      const buf = /** @type {GPUBuffer} */ (list.pop());
      this.freeOrder.delete(buf);
      this.freeBytes -= size;
      this.reused += 1;
      return buf;
    }
    if (size > this.maxBufferSize) { // what createBuffer's validation would refuse
      throw new GpuLabError('BACKEND', `createBuffer (${label}): ${size} bytes is past ` +
        `maxBufferSize (${this.maxBufferSize})`);
    }
    const buf = this.device.createBuffer({ size, usage, label });
    this.live += 1;
    this.liveBytes += size;
    this.created += 1;
    return buf;
  }

  /**
   * Give a buffer back (it must not be mapped and no pending work may still write it after
   * a later acquire; queue order guarantees that for work submitted before the next use).
   * @param {GPUBuffer} buf
   */
  release(buf) {
    if (this.freeOrder.has(buf)) return; // released twice: keep one entry
    const k = key(buf.usage, buf.size);
    let list = this.free.get(k);
    if (!list) this.free.set(k, (list = []));
    list.push(buf);
    this.freeOrder.add(buf);
    this.freeBytes += buf.size;
    this.trim();
  }

  /** Destroy the oldest free buffers while more than maxFreeBytes are kept. */
  trim() {
    for (const buf of this.freeOrder) {
      if (this.freeBytes <= this.maxFreeBytes) break;
      this.freeOrder.delete(buf);
      const list = /** @type {GPUBuffer[]} */ (this.free.get(key(buf.usage, buf.size)));
      list.splice(list.indexOf(buf), 1);
      this.freeBytes -= buf.size;
      this.destroy(buf);
    }
  }

  /** @param {GPUBuffer} buf */
  destroy(buf) {
    this.live -= 1;
    this.liveBytes -= buf.size;
    buf.destroy();
  }

  /** Counts for tests and stats: live = in use + free. */
  stats() {
    return {
      live: this.live,
      liveBytes: this.liveBytes,
      free: this.freeOrder.size,
      freeBytes: this.freeBytes,
      created: this.created,
      reused: this.reused,
    };
  }

  /** Destroy every free buffer (buffers still in use belong to their programs). */
  clear() {
    const bytes = this.maxFreeBytes;
    this.maxFreeBytes = 0;
    this.trim();
    this.maxFreeBytes = bytes;
  }
}

/** @param {number} usage @param {number} size */
function key(usage, size) {
  return `${usage}:${size}`;
}
