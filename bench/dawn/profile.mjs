// Where a run of the JS WebGPU backend spends its time, from outside the runtime:
// `installProfile()` wraps the WebGPU API's prototype methods (GPUQueue, GPUDevice,
// GPUCommandEncoder, GPUComputePassEncoder, GPUBuffer) so each call is counted and timed with
// performance.now, and, where the adapter offers "timestamp-query", adds timestampWrites to
// every compute pass the backend begins (the backend itself is unchanged). Pass times come
// from the GPU's clock; Dawn quantizes them unless its `timestamp_quantization` toggle is off
// (GPULAB_DAWN_FLAGS=disable-dawn-features=timestamp_quantization).
// The wrappers cost about a microsecond per call: a profiled run is slower than a plain one,
// so bench/dawn/mlp.mjs times its table without them and profiles in a separate process.

/** Queries per querySet: 2 per pass. They are resolved once, after the measured run, in an
 * encoder of their own (Dawn converts ticks to ns with a compute pass of its own at resolve:
 * resolving inside the run's encoders would add that work to the run). */
const QUERIES = 4096;

/**
 * @typedef {{calls: Record<string, number>, ms: Record<string, number>,
 *   passes: Array<[bigint, bigint]>}} Window
 */

/** @returns {Window} */
const emptyWindow = () => ({ calls: {}, ms: {}, passes: [] });

export class Profile {
  constructor() {
    /** recording only while on (collect()'s own GPU work is not measured) */
    this.on = false;
    /** @type {Window} */
    this.window = emptyWindow();
    /** @type {{device: GPUDevice, querySet: GPUQuerySet, resolve: GPUBuffer, next: number} | null} */
    this.ts = null;
    /** @type {WeakMap<GPUCommandEncoder, GPUDevice>} */
    this.deviceOf = new WeakMap();
    /** @type {number[]} first query of each timed pass, in encoding order */
    this.pairs = [];
    /** @type {string[]} what the timestamps could not do (said in the report) */
    this.notes = [];
  }

  /** @param {string} name @param {number} ms */
  add(name, ms) {
    if (!this.on) return;
    const w = this.window;
    w.calls[name] = (w.calls[name] ?? 0) + 1;
    w.ms[name] = (w.ms[name] ?? 0) + ms;
  }

  /** Start a measured window: counters to zero, timestamp queries from the first. */
  start() {
    this.window = emptyWindow();
    if (this.ts) this.ts.next = 0;
    this.on = true;
  }

  /**
   * End the window (call once the run's work is done: its read-back resolved) and read the
   * pass timestamps back. @returns {Promise<Window>}
   */
  async stop() {
    this.on = false;
    const w = this.window;
    const ts = this.ts;
    if (!ts || !ts.next) return w;
    const bytes = ts.next * 8;
    const read = ts.device.createBuffer({ size: bytes,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = ts.device.createCommandEncoder();
    encoder.resolveQuerySet(ts.querySet, 0, ts.next, ts.resolve, 0);
    encoder.copyBufferToBuffer(ts.resolve, 0, read, 0, bytes);
    ts.device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const words = new BigUint64Array(read.getMappedRange().slice(0));
    read.unmap();
    read.destroy();
    for (const pair of this.pairs) {
      w.passes.push([words[pair], words[pair + 1]]);
    }
    this.pairs = [];
    return w;
  }

  /** The timestamp state of `device` (one device: the backend's). @param {GPUDevice} device */
  timestamps(device) {
    if (!device.features?.has?.('timestamp-query')) return null;
    if (!this.ts || this.ts.device !== device) {
      const querySet = device.createQuerySet({ type: 'timestamp', count: QUERIES });
      const resolve = device.createBuffer({ size: QUERIES * 8,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      this.ts = { device, querySet, resolve, next: 0 };
      this.pairs = [];
    }
    return this.ts;
  }
}

/**
 * Wrap `proto[name]` so each call is timed into `profile` under `label` (and `after`, if
 * given, sees the call's arguments and result).
 * @param {any} proto @param {string} name @param {Profile} profile @param {string} label
 */
function timeMethod(proto, name, profile, label = name) {
  const orig = proto?.[name];
  if (typeof orig !== 'function') return;
  proto[name] = function timed(...args) {
    if (!profile.on) return orig.apply(this, args);
    const t0 = performance.now();
    const out = orig.apply(this, args);
    profile.add(label, performance.now() - t0);
    return out;
  };
}

/**
 * A promise-returning method: the time until its promise settles, under `label` (mapAsync:
 * the GPU's work before it included; popErrorScope: the event-loop hops until Dawn answers).
 * @param {any} proto @param {string} name @param {Profile} profile @param {string} label
 */
function timeSettle(proto, name, profile, label) {
  const orig = proto?.[name];
  if (typeof orig !== 'function') return;
  proto[name] = function timedSettle(...args) {
    if (!profile.on) return orig.apply(this, args);
    const t0 = performance.now();
    const settled = () => profile.add(label, performance.now() - t0);
    const out = orig.apply(this, args);
    out.then(settled, settled);
    return out;
  };
}

/** Ask for "timestamp-query" when the adapter has it (the backend asks for no features). */
function requestTimestamps(profile) {
  const proto = globalThis.GPUAdapter?.prototype;
  const orig = proto?.requestDevice;
  if (typeof orig !== 'function') return;
  proto.requestDevice = function withTimestamps(desc = {}) {
    if (!this.features?.has?.('timestamp-query')) {
      profile.notes.push('the adapter has no "timestamp-query": no GPU pass times');
      return orig.call(this, desc);
    }
    const features = [...(desc.requiredFeatures ?? [])];
    if (!features.includes('timestamp-query')) features.push('timestamp-query');
    return orig.call(this, { ...desc, requiredFeatures: features });
  };
}

/** Encoders remember their device; compute passes get timestampWrites. */
function timestampPasses(profile) {
  const dev = globalThis.GPUDevice?.prototype;
  const enc = globalThis.GPUCommandEncoder?.prototype;
  const create = dev?.createCommandEncoder;
  const begin = enc?.beginComputePass;
  if (!create || !begin) return;
  dev.createCommandEncoder = function remember(...args) {
    if (!profile.on) return create.apply(this, args);
    const t0 = performance.now();
    const encoder = create.apply(this, args);
    profile.add('createCommandEncoder', performance.now() - t0);
    profile.deviceOf.set(encoder, this);
    return encoder;
  };
  enc.beginComputePass = function stamped(desc = {}) {
    if (!profile.on) return begin.call(this, desc);
    const t0 = performance.now();
    const device = profile.deviceOf.get(this);
    const ts = device && !desc.timestampWrites ? profile.timestamps(device) : null;
    let pass;
    if (ts && ts.next + 2 <= QUERIES) {
      const q = ts.next;
      ts.next += 2;
      profile.pairs.push(q);
      pass = begin.call(this, { ...desc, timestampWrites: { querySet: ts.querySet,
        beginningOfPassWriteIndex: q, endOfPassWriteIndex: q + 1 } });
    } else {
      pass = begin.call(this, desc);
    }
    profile.add('beginComputePass', performance.now() - t0);
    return pass;
  };
}

/**
 * Install the wrappers (before the backend requests its device) and return the Profile.
 * @param {{timestamps?: boolean}} [options] timestamps: false leaves passes alone
 */
export function installProfile({ timestamps = true } = {}) {
  const profile = new Profile();
  const g = /** @type {any} */ (globalThis);
  if (timestamps) {
    requestTimestamps(profile);
    timestampPasses(profile);
  } else {
    timeMethod(g.GPUDevice?.prototype, 'createCommandEncoder', profile);
    timeMethod(g.GPUCommandEncoder?.prototype, 'beginComputePass', profile);
  }
  timeMethod(g.GPUCommandEncoder?.prototype, 'finish', profile);
  for (const name of ['submit', 'writeBuffer']) timeMethod(g.GPUQueue?.prototype, name, profile);
  timeSettle(g.GPUQueue?.prototype, 'onSubmittedWorkDone', profile, 'onSubmittedWorkDone (wait)');
  for (const name of ['createBindGroup', 'createBuffer', 'pushErrorScope']) {
    timeMethod(g.GPUDevice?.prototype, name, profile);
  }
  timeSettle(g.GPUDevice?.prototype, 'popErrorScope', profile, 'popErrorScope (wait, each)');
  timeMethod(g.GPUCommandEncoder?.prototype, 'copyBufferToBuffer', profile);
  for (const name of ['setPipeline', 'setBindGroup', 'dispatchWorkgroups', 'end']) {
    timeMethod(g.GPUComputePassEncoder?.prototype, name, profile, `pass.${name}`);
  }
  timeSettle(g.GPUBuffer?.prototype, 'mapAsync', profile, 'mapAsync (wait)');
  for (const name of ['getMappedRange', 'unmap']) timeMethod(g.GPUBuffer?.prototype, name, profile);
  return profile;
}

/**
 * Wrap a prepared session's program.run (the backend's part of session.run) so the
 * session's own work (feed checks, output checks) shows as the rest of the wall time.
 * @param {any} session @param {Profile} profile
 */
export function timeProgramRun(session, profile) {
  const program = session?.parts?.program;
  if (!program || typeof program.run !== 'function') return;
  const orig = program.run.bind(program);
  program.run = async (...args) => {
    const t0 = performance.now();
    try {
      return await orig(...args);
    } finally {
      profile.add('program.run (all)', performance.now() - t0);
    }
  };
}
