// The linear-memory allocator of one wasm instance: first-fit over a sorted free list with
// coalescing, 16-byte aligned blocks (SIMD loads), growing the memory when nothing fits.
// Programs allocate at prepare and free at dispose, so consecutive executes reuse the same
// blocks instead of growing.
import { GpuLabError } from '../../errors.mjs';

const ALIGN = 16;
const PAGE = 65536;
const MAX_BYTES = 4 * 1024 * 1024 * 1024; // wasm32 address space

export class Arena {
  /** @param {WebAssembly.Memory} memory @param {number} base first free byte (__heap_base) */
  constructor(memory, base) {
    this.memory = memory;
    const start = Math.ceil(base / ALIGN) * ALIGN;
    /** @type {{at: number, size: number}[]} sorted by address */
    this.free = [{ at: start, size: memory.buffer.byteLength - start }];
    /** @type {Map<number, number>} address -> size of live blocks */
    this.live = new Map();
    this.grows = 0;
  }

  /** A block of at least `bytes` bytes; refuses with LIMIT past the wasm32 address space. */
  alloc(/** @type {number} */ bytes) {
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
    let i = this.free.findIndex((b) => b.size >= size);
    if (i < 0) i = this.grow(size);
    const block = this.free[i];
    const at = block.at;
    block.at += size;
    block.size -= size;
    if (block.size === 0) this.free.splice(i, 1);
    this.live.set(at, size);
    return at;
  }

  /** Returns a block to the free list, merging it with free neighbours. */
  release(/** @type {number} */ at) {
    const size = this.live.get(at);
    if (size === undefined) return;
    this.live.delete(at);
    let i = this.free.findIndex((b) => b.at > at);
    if (i < 0) i = this.free.length;
    this.free.splice(i, 0, { at, size });
    const next = this.free[i + 1];
    if (next && at + size === next.at) {
      this.free[i].size += next.size;
      this.free.splice(i + 1, 1);
    }
    const prev = this.free[i - 1];
    if (prev && prev.at + prev.size === at) {
      prev.size += this.free[i].size;
      this.free.splice(i, 1);
    }
  }

  /** Grows the memory so the last free block holds `size` bytes; returns that block's index. */
  grow(/** @type {number} */ size) {
    const end = this.memory.buffer.byteLength;
    const last = this.free[this.free.length - 1];
    const tail = last && last.at + last.size === end ? last.size : 0;
    const pages = Math.ceil((size - tail) / PAGE);
    if (end + pages * PAGE > MAX_BYTES) {
      throw new GpuLabError('LIMIT', `wasm backend: ${size} bytes do not fit in the 4 GiB ` +
        `wasm32 memory (${end - this.freeBytes()} bytes in use)`);
    }
    try {
      this.memory.grow(pages);
    } catch (err) {
      throw new GpuLabError('LIMIT', `wasm backend: cannot grow memory by ${pages} pages ` +
        `(${pages * PAGE} bytes): ${/** @type {Error} */ (err).message}`);
    }
    this.grows += 1;
    if (tail > 0) {
      last.size += pages * PAGE;
    } else {
      this.free.push({ at: end, size: pages * PAGE });
    }
    return this.free.length - 1;
  }

  freeBytes() {
    return this.free.reduce((s, b) => s + b.size, 0);
  }

  stats() {
    return { memoryBytes: this.memory.buffer.byteLength, liveBlocks: this.live.size,
      freeBlocks: this.free.length, freeBytes: this.freeBytes(), grows: this.grows };
  }
}
