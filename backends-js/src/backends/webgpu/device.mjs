// The GPU device and everything that can go wrong with it: limits requested from the adapter,
// device loss (turned into BACKEND errors, never a hang), and error scopes around device work.

import { GpuLabError, asBackendError } from '../../errors.mjs';
import { errorText } from './adapter.mjs';

/** Limits the plan may need; each is requested at the adapter's maximum. */
const WANTED_LIMITS = [
  'maxComputeWorkgroupStorageSize',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupsPerDimension',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxStorageBuffersPerShaderStage',
];

/**
 * A device plus its loss state. Every piece of device work goes through `guard` (sync error
 * scopes) and every wait through `race` (so a lost device rejects instead of hanging).
 */
export class GpuDevice {
  /** @param {GPUDevice} device */
  constructor(device) {
    this.device = device;
    /** @type {string | null} why the device is gone (set once) */
    this.lostMessage = null;
    this.disposed = false;
    /** Resolves (never rejects) when the device is lost or destroyed. */
    this.lost = device.lost.then((info) => {
      const why = info?.message || info?.reason || 'unknown reason';
      this.lostMessage = this.disposed ? 'backend disposed' : `WebGPU device lost: ${why}`;
      return this.lostMessage;
    });
    /** @type {string[]} the last few errors raised outside any error scope (for stats) */
    this.uncaptured = [];
    device.addEventListener?.('uncapturederror', (ev) => {
      this.uncaptured = [...this.uncaptured.slice(-9), errorText(ev.error)];
    });
  }

  /** The limits the planner sees: the ones this device was created with. */
  limits() {
    /** @type {Record<string, number>} */
    const out = {};
    const lim = this.device.limits;
    for (const key of WANTED_LIMITS) out[key] = lim[key];
    // A tensor must fit one binding AND one buffer; the planner refuses larger ones with LIMIT.
    out.maxStorageBufferBindingSize = Math.min(lim.maxStorageBufferBindingSize, lim.maxBufferSize);
    out.minUniformBufferOffsetAlignment = lim.minUniformBufferOffsetAlignment;
    return out;
  }

  /** Throw BACKEND if the device can no longer be used. */
  check() {
    if (this.disposed) throw new GpuLabError('DISPOSED', 'the WebGPU backend was disposed');
    if (this.lostMessage) throw new GpuLabError('BACKEND', this.lostMessage);
  }

  /**
   * Run synchronous device work inside validation/out-of-memory/internal error scopes and
   * turn a captured error into BACKEND naming `what`. No await happens between push and pop,
   * so concurrent work cannot land in these scopes.
   * @template T
   * @param {string} what
   * @param {() => T} work
   * @returns {Promise<T>}
   */
  async guard(what, work) {
    this.check();
    const d = this.device;
    d.pushErrorScope('internal');
    d.pushErrorScope('out-of-memory');
    d.pushErrorScope('validation');
    let result;
    let thrown = null;
    try {
      result = work();
    } catch (err) {
      thrown = err;
    }
    const scopes = [d.popErrorScope(), d.popErrorScope(), d.popErrorScope()];
    const errors = await this.race(Promise.all(scopes), what);
    if (thrown) throw webgpuFailure(thrown, what);
    const kinds = ['validation error', 'out of memory', 'internal error'];
    const found = errors.findIndex((e) => e);
    if (found >= 0) {
      const message = errors[found].message;
      throw new GpuLabError('BACKEND', `WebGPU ${kinds[found]} in ${what}: ${message}`);
    }
    return result;
  }

  /**
   * Wait for `promise`, but reject with BACKEND as soon as the device is lost.
   * @template T
   * @param {Promise<T>} promise
   * @param {string} what
   * @returns {Promise<T>}
   */
  async race(promise, what) {
    this.check();
    const lostFirst = this.lost.then(() => {
      throw this.gone(what, null);
    });
    try {
      return await Promise.race([promise, lostFirst]);
    } catch (err) {
      if (err instanceof GpuLabError) throw err;
      // A map or pipeline failure that happened because the device went away says so.
      if (this.disposed || this.lostMessage) throw this.gone(what, err);
      throw webgpuFailure(err, what);
    } finally {
      lostFirst.catch(() => {});
    }
  }

  /**
   * The error for work cut short by the device going away: DISPOSED when we destroyed it
   * (runtime.dispose() during a run), BACKEND when it was lost.
   * @param {string} what @param {unknown} cause
   */
  gone(what, cause) {
    const detail = cause ? `${what}: ${errorText(cause)}` : what;
    if (this.disposed) {
      return new GpuLabError('DISPOSED', `the WebGPU backend was disposed (during ${detail})`);
    }
    const lost = this.lostMessage || 'WebGPU device lost';
    return new GpuLabError('BACKEND', `${lost} (during ${detail})`);
  }

  /** Destroy on purpose: later use reports DISPOSED, not a lost device. */
  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.device.destroy();
  }
}

/**
 * Request a device with the limits a plan may need, at the adapter's maximum.
 * @param {GPUAdapter} adapter
 * @returns {Promise<GpuDevice>}
 */
export async function openDevice(adapter) {
  /** @type {Record<string, number>} */
  const requiredLimits = {};
  for (const key of WANTED_LIMITS) {
    if (adapter.limits[key] !== undefined) requiredLimits[key] = adapter.limits[key];
  }
  try {
    const device = await adapter.requestDevice({ requiredLimits, label: 'gpu-lab' });
    return new GpuDevice(device);
  } catch (err) {
    throw new GpuLabError('UNAVAILABLE', `WebGPU requestDevice failed: ${errorText(err)}`);
  }
}

/**
 * Keep GpuLabErrors as they are; anything else that escapes device work is a BACKEND error.
 * @param {unknown} err
 * @param {string} what
 */
export function webgpuFailure(err, what) {
  return asBackendError(err, what, { keepAll: true, who: 'WebGPU' });
}
