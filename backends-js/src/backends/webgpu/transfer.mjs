// Moving tensors between the page and the device inside one command encoder: feeds staged for
// multi-step runs, carries between steps, and read-back through one mappable buffer. Every
// dtype is 32-bit words on the device (bool as u32 0/1): feeds arrive as those words
// (toDeviceWords) and read-backs become typed arrays of each node's dtype (fromDeviceWords).
import { fromDeviceWords } from '../../dtypes.mjs';

/**
 * A tensor's home on the device: the pooled buffer and the bytes the tensor uses.
 * @typedef {{buffer: GPUBuffer, bytes: number}} Slot
 * @typedef {import('./pool.mjs').BufferPool} BufferPool
 * @typedef {import('./device.mjs').GpuDevice} GpuDevice
 * @typedef {{buffer: GPUBuffer, offsets: number[][]}} StagedFeeds
 * @typedef {{buffer: GPUBuffer, offsets: number[], total: number}} Staging
 */

export const STORAGE = () =>
  GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const STAGING_IN = () => GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const STAGING_OUT = () => GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;

/**
 * Feeds of every session step. One step: written straight into the input buffers. Several:
 * `writeBuffer`s all land before the single submit, so each step's values go into one staging
 * buffer and are copied in before their step (`copyFeeds`).
 * @param {GPUQueue} queue @param {BufferPool} pool
 * @param {Slot[]} slots the fed inputs' slots @param {ArrayBufferView[][]} feeds [step][feed]
 * @returns {StagedFeeds | null}
 */
export function stageFeeds(queue, pool, slots, feeds) {
  if (feeds.length <= 1 || slots.length === 0) {
    (feeds[0] || []).forEach((data, j) => queue.writeBuffer(slots[j].buffer, 0, data));
    return null;
  }
  let total = 0;
  const offsets = feeds.map((arrays) => arrays.map((a) => {
    const at = total;
    total += a.byteLength;
    return at;
  }));
  const buffer = pool.acquire(STAGING_IN(), total, 'feeds');
  feeds.forEach((arrays, s) => {
    arrays.forEach((a, j) => queue.writeBuffer(buffer, offsets[s][j], a));
  });
  return { buffer, offsets };
}

/**
 * One step's feeds straight into the input buffers (a queue write lands in queue order: after
 * every submission made before it, before every one after it).
 * @param {GPUQueue} queue @param {Slot[]} slots @param {ArrayBufferView[]} arrays
 */
export function writeFeeds(queue, slots, arrays) {
  for (let j = 0; j < arrays.length; j++) queue.writeBuffer(slots[j].buffer, 0, arrays[j]);
}

/**
 * Copy session step `s`'s staged feeds into the input buffers.
 * @param {GPUCommandEncoder} encoder @param {StagedFeeds} staged @param {Slot[]} slots
 * @param {number} s
 */
export function copyFeeds(encoder, staged, slots, s) {
  slots.forEach((slot, j) => {
    encoder.copyBufferToBuffer(staged.buffer, staged.offsets[s][j], slot.buffer, 0, slot.bytes);
  });
}

/**
 * Copy carried outputs into their inputs, all as of the end of the step: a source that is
 * itself a carry target (outputs that are inputs, e.g. a swap) goes through scratch first.
 * @param {GPUCommandEncoder} encoder
 * @param {Array<[Slot, Slot]>} pairs [source output, target input]
 * @param {(src: Slot) => GPUBuffer} scratchFor a scratch buffer of the source's size
 */
export function copyCarries(encoder, pairs, scratchFor) {
  const targets = new Set(pairs.map(([, dst]) => dst.buffer));
  const scratch = pairs.map(([src]) => (targets.has(src.buffer) ? scratchFor(src) : null));
  pairs.forEach(([src], i) => {
    const tmp = scratch[i];
    if (tmp) encoder.copyBufferToBuffer(src.buffer, 0, tmp, 0, src.bytes);
  });
  pairs.forEach(([src, dst], i) => {
    const from = scratch[i] || src.buffer;
    if (from !== dst.buffer) encoder.copyBufferToBuffer(from, 0, dst.buffer, 0, src.bytes);
  });
}

/**
 * Copy the slots to read into one mappable staging buffer (null when nothing is read).
 * @param {GPUCommandEncoder} encoder @param {BufferPool} pool @param {Slot[]} reads
 * @returns {Staging | null}
 */
export function encodeReads(encoder, pool, reads) {
  if (!reads.length) return null;
  let total = 0;
  const offsets = reads.map((slot) => {
    const at = total;
    total += slot.bytes;
    return at;
  });
  const buffer = pool.acquire(STAGING_OUT(), total, 'read-back');
  reads.forEach((slot, i) => {
    encoder.copyBufferToBuffer(slot.buffer, 0, buffer, offsets[i], slot.bytes);
  });
  return { buffer, offsets, total };
}

/**
 * Map the staging buffer (racing device loss, so a lost device rejects instead of hanging) and
 * copy each tensor out.
 * @param {GpuDevice} gpu @param {BufferPool} pool @param {Staging | null} staging
 * @param {number[]} ids @param {Slot[]} reads @param {string} what
 * @param {(id: number) => string} [dtypeOf] each node's dtype (float32 when not given)
 * @returns {Promise<Map<number, import('../../dtypes.mjs').TypedData>>}
 */
export async function readBack(gpu, pool, staging, ids, reads, what, dtypeOf = () => 'float32') {
  /** @type {Map<number, import('../../dtypes.mjs').TypedData>} */
  const out = new Map();
  if (!staging) {
    // Nothing to read: still wait for the work, so errors and loss surface in this call.
    await gpu.race(gpu.device.queue.onSubmittedWorkDone(), what);
    return out;
  }
  try {
    const mapped = staging.buffer.mapAsync(GPUMapMode.READ, 0, staging.total);
    await gpu.race(mapped, `${what} (read-back)`);
  } catch (err) {
    pool.destroy(staging.buffer); // maybe still pending a failed map: never reuse it
    throw err;
  }
  const bytes = staging.buffer.getMappedRange(0, staging.total);
  ids.forEach((id, i) => {
    const at = staging.offsets[i];
    out.set(id, fromDeviceWords(new Uint32Array(bytes, at, reads[i].bytes / 4), dtypeOf(id)));
  });
  staging.buffer.unmap();
  pool.release(staging.buffer);
  return out;
}
