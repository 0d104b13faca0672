// Prepared sessions, the same for every backend: names <-> ids, feed/carry/resident checks,
// step normalization, read-back checks and the poisoning rule of docs/protocol.md
// ("Prepared sessions"). Backends only provide a Program (docs/architecture.md).
import { GpuLabError, asBackendError, nodeError } from './errors.mjs';
import { formatShape, sameShape } from './shapes.mjs';
import { isTypedOf, toTypedData } from './dtypes.mjs';
import { LIMITS } from './optable.mjs';

/**
 * @typedef {import('./validate.mjs').CheckedGraph} CheckedGraph
 * @typedef {import('./dtypes.mjs').TypedData} TypedData
 * @typedef {{run(steps: Map<number, TypedData>[], readIds: number[]): Promise<Map<number, TypedData>>,
 *   download(id: number): Promise<TypedData>, dispose(): void}} Program
 *   Values in and out are typed arrays of each node's dtype (bool: Uint8Array of 0/1).
 * @typedef {{feeds?: number[], carry?: Record<string, string>|Map<number, string>,
 *   resident?: string[], outputs?: string[]}} SessionOptions
 * @typedef {{shape: number[], dtype: string, data: TypedData}} OutputValue
 * @typedef {{failNextRun?: boolean|string}} Hooks
 */

/** @param {string} message */
const invalid = (message) => new GpuLabError('VALIDATION', message);

/** @param {unknown} v */
const isIntId = (v) => typeof v === 'number' && Number.isInteger(v);

/**
 * Every input without data must be fed; `execute` calls this with no feeds.
 * @param {CheckedGraph} checked @param {Set<number>} fed
 */
export function checkInputsProvided(checked, fed) {
  for (const node of checked.nodes) {
    if (node.op === 'input' && !node.data && !fed.has(node.id)) {
      throw nodeError('VALIDATION', node, 'has no data and is not fed (list it in feeds of ' +
        'prepare(), or give it data)');
    }
  }
}

/** @param {CheckedGraph} checked @param {unknown} feeds */
function resolveFeeds(checked, feeds = []) {
  if (!Array.isArray(feeds)) throw invalid(`feeds must be a list of input ids, got ${typeof feeds}`);
  const fed = new Set();
  for (const id of feeds) {
    const node = isIntId(id) ? checked.byId.get(id) : undefined;
    if (!node) throw invalid(`feeds: ${JSON.stringify(id)} is not the id of a node`);
    if (node.op !== 'input') throw nodeError('VALIDATION', node, 'is fed but is not an input');
    if (node.data) throw nodeError('VALIDATION', node, 'is fed but has data (feed inputs without data)');
    if (fed.has(id)) throw nodeError('VALIDATION', node, 'is listed twice in feeds');
    fed.add(id);
  }
  checkInputsProvided(checked, fed);
  return [...fed];
}

/** @param {CheckedGraph} checked @param {string} name @param {string} what */
function outputId(checked, name, what) {
  const out = checked.outputs.find((o) => o.name === name);
  if (!out) {
    throw invalid(`${what}: no output named ${JSON.stringify(name)} (outputs: ` +
      `${checked.outputs.map((o) => o.name).join(', ')})`);
  }
  return out.id;
}

/**
 * carry {inputId: outputName} -> Map(inputId -> outputId).
 * @param {CheckedGraph} checked @param {unknown} carry
 */
function resolveCarry(checked, carry = {}) {
  const entries = carry instanceof Map ? [...carry.entries()] : Object.entries(carry ?? {});
  /** @type {Map<number, number>} */
  const resolved = new Map();
  for (const [key, name] of entries) {
    const id = typeof key === 'string' && /^\d+$/.test(key) ? Number(key) : key;
    const node = isIntId(id) ? checked.byId.get(id) : undefined;
    if (!node) throw invalid(`carry: ${JSON.stringify(key)} is not the id of a node`);
    if (node.op !== 'input') throw nodeError('VALIDATION', node, 'is carried but is not an input');
    if (!node.data) {
      throw nodeError('VALIDATION', node, 'is carried but has no data (its initial value)');
    }
    const target = checked.byId.get(outputId(checked, name, `carry of node ${id}`));
    if (!sameShape(node.shape, target.shape)) {
      throw nodeError('VALIDATION', node, `is carried from output ${JSON.stringify(name)} of ` +
        `shape ${formatShape(target.shape)}, but its shape is ${formatShape(node.shape)}`);
    }
    if (node.dtype !== target.dtype) {
      throw nodeError('VALIDATION', node, `is carried from output ${JSON.stringify(name)} of ` +
        `dtype ${target.dtype}, but its dtype is ${node.dtype}`);
    }
    resolved.set(id, target.id);
  }
  return resolved;
}

/**
 * Check a session's options against its checked graph.
 * @param {CheckedGraph} checked @param {SessionOptions} options
 */
export function resolveSessionOptions(checked, options = {}) {
  options ??= {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(`session options must be an object {feeds, carry, resident, outputs}, got ${typeof options}`);
  }
  const feeds = resolveFeeds(checked, options.feeds);
  const carry = resolveCarry(checked, options.carry);
  const resident = options.resident ?? [];
  if (!Array.isArray(resident)) throw invalid('resident must be a list of output names');
  resident.forEach((n) => outputId(checked, n, 'resident'));
  const readNames = options.outputs ?? checked.outputs.map((o) => o.name)
    .filter((n) => !resident.includes(n));
  if (!Array.isArray(readNames)) throw invalid('outputs must be a list of output names');
  readNames.forEach((n) => outputId(checked, n, 'outputs'));
  const keep = new Set([...resident.map((n) => outputId(checked, n, 'resident')), ...carry.values()]);
  return { feeds, carry, keep: [...keep], resident, readNames };
}

/**
 * A feed value as a typed array of the input's dtype and size, checked as input data is
 * (docs/protocol.md "Dtypes": a typed array of the dtype is kept, lists and other typed arrays
 * are converted and checked, {"base64"} and ArrayBuffers are bytes).
 * @param {import('./validate.mjs').CheckedNode} node @param {unknown} value @param {number} step
 */
function feedValue(node, value, step) {
  return toTypedData(value, node.dtype, node.shape, node, `step ${step}: feed`);
}

/** The feed map of every step of a session without feeds (read only, shared). */
const NO_FEEDS = new Map();

/**
 * A step argument's form and size, before anything is built: a count (an integer >= 1, at
 * most max_steps; none where the session has feeds) or a non-empty list of at most max_steps
 * feed maps. VALIDATION or LIMIT (docs/protocol.md "Limits").
 * @param {number[]} feeds @param {unknown} steps
 */
export function checkStepArgument(feeds, steps) {
  const limit = LIMITS.max_steps;
  if (typeof steps === 'number') {
    if (!Number.isInteger(steps) || steps < 1) throw invalid(`step count must be an integer >= 1, got ${steps}`);
    if (steps > limit) {
      throw new GpuLabError('LIMIT', `run: ${steps} steps, past max_steps ${limit} per call ` +
        '(split a longer run into several calls)');
    }
    if (feeds.length > 0) {
      throw invalid(`this session feeds ${feeds.length} input(s): run() needs one feed map per step`);
    }
    return;
  }
  if (!Array.isArray(steps) || steps.length === 0) {
    throw invalid('run() takes a step count or a non-empty list of feed maps');
  }
  if (steps.length > limit) {
    throw new GpuLabError('LIMIT', `run: ${steps.length} steps, past max_steps ${limit} per ` +
      'call (split a longer run into several calls)');
  }
}

/**
 * One Map(inputId -> data) per step.
 * @param {CheckedGraph} checked @param {number[]} feeds @param {unknown} steps
 */
export function normalizeSteps(checked, feeds, steps) {
  checkStepArgument(feeds, steps);
  if (typeof steps === 'number') return new Array(steps).fill(NO_FEEDS);
  return /** @type {unknown[]} */ (steps).map((step, s) => {
    const entries = step instanceof Map ? [...step.entries()]
      : (typeof step === 'object' && step !== null ? Object.entries(step) : null);
    if (entries === null) throw invalid(`step ${s}: a feed map {inputId: data} is needed`);
    /** @type {Map<number, TypedData>} */
    const map = new Map();
    for (const [key, value] of entries) {
      const id = Number(key);
      if (!feeds.includes(id)) throw invalid(`step ${s}: ${JSON.stringify(key)} is not a fed input id`);
      map.set(id, feedValue(checked.byId.get(id), value, s));
    }
    for (const id of feeds) {
      if (!map.has(id)) throw nodeError('VALIDATION', checked.byId.get(id), `step ${s}: no feed given`);
    }
    return map;
  });
}

/** Index of the first NaN or infinity of float32 data, or null (other dtypes are finite). */
function firstNonFinite(/** @type {TypedData} */ data) {
  if (!(data instanceof Float32Array)) return null;
  for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i])) return i;
  return null;
}

/**
 * A read-back must be a typed array of the node's dtype: a backend that returns another kind
 * has a bug, reported as BACKEND rather than handed out mislabeled.
 */
function checkReadBack(/** @type {unknown} */ data, /** @type {{dtype: string}} */ node, label) {
  if (!isTypedOf(data, node.dtype)) {
    const got = data?.constructor?.name ?? typeof data;
    throw new GpuLabError('BACKEND', `${label}: the backend returned a ${got} for ${node.dtype} data`);
  }
}

/** A prepared graph on one backend. Created by runtime.prepare(). */
export class Session {
  /** @type {'ready'|'poisoned'|'disposed'} */
  #state = 'ready';
  /** @type {unknown} */
  #poison = null;
  /** @type {Promise<unknown>} */
  #queue = Promise.resolve();

  /**
   * @param {{backendName: string, info: object, attempts: object[], fallback?: string|null,
   *   checked: CheckedGraph, program: Program, resolved: ReturnType<typeof resolveSessionOptions>, hooks: Hooks,
   *   onDispose?: (s: Session) => void}} parts
   */
  constructor(parts) {
    this.backend = parts.backendName;
    this.parts = parts;
  }

  /** The state: 'ready', 'poisoned' or 'disposed'. */
  get state() {
    return this.#state;
  }

  /** Calls run one after another, so a poisoning is seen by every later call. */
  #exclusive(fn) {
    const next = this.#queue.then(() => fn(), () => fn());
    this.#queue = next.catch(() => {});
    return next;
  }

  #checkUsable() {
    if (this.#state === 'disposed') throw new GpuLabError('DISPOSED', 'the session was disposed');
    if (this.#state === 'poisoned') {
      const why = this.#poison instanceof Error ? this.#poison.message : String(this.#poison);
      throw new GpuLabError('STATE', `the session is poisoned by an earlier failure (${why}); ` +
        'only dispose() remains', null, { cause: this.#poison });
    }
  }

  /** Poison and return the BACKEND error to throw. @param {unknown} err @param {string} context */
  #fail(err, context) {
    // disposed while it ran (the CPU backends stop between steps): stays disposed, not poisoned
    if (this.#state === 'disposed') return new GpuLabError('DISPOSED', 'the session was disposed');
    const error = asBackendError(err, context);
    this.#state = 'poisoned';
    this.#poison = error;
    return error;
  }

  /** @param {string} label @param {TypedData} data @param {string} context @param {{dtype: string}} node */
  #checkFinite(label, data, context, node) {
    try {
      checkReadBack(data, node, label);
    } catch (err) {
      throw this.#fail(err, context);
    }
    const at = firstNonFinite(data);
    if (at !== null) {
      throw this.#fail(new GpuLabError('BACKEND', `non-finite value in ${label} at index ${at} ` +
        `(${data[at]})`), context);
    }
  }

  /**
   * Run steps (a count, or one feed map per step) and return the last step's outputs.
   * @param {number|Array<Record<string, ArrayLike<number>>|Map<number, ArrayLike<number>>>} [steps]
   */
  run(steps = 1) {
    return this.#exclusive(() => this.#run(steps));
  }

  async #run(steps) {
    this.#checkUsable();
    const { checked, program, resolved, hooks } = this.parts;
    const maps = normalizeSteps(checked, resolved.feeds, steps);
    const readIds = [...new Set(resolved.readNames.map((n) => outputId(checked, n, 'outputs')))];
    const t0 = performance.now();
    let read;
    try {
      if (hooks.failNextRun) {
        const why = typeof hooks.failNextRun === 'string' ? hooks.failNextRun : 'injected failure';
        hooks.failNextRun = false;
        throw new Error(`test hook failNextRun: ${why}`);
      }
      read = await program.run(maps, readIds);
    } catch (err) {
      throw this.#fail(err, 'run');
    }
    /** @type {Record<string, OutputValue>} */
    const outputs = {};
    const handedOut = new Set();
    for (const name of resolved.readNames) {
      const id = outputId(checked, name, 'outputs');
      const data = read.get(id);
      if (!data) throw this.#fail(new Error(`backend returned no value for output "${name}"`), 'run');
      const node = checked.byId.get(id);
      this.#checkFinite(`output "${name}"`, data, 'run', node);
      // Two names of one node get their own arrays, as in execute.
      outputs[name] = { shape: [...node.shape], dtype: node.dtype,
        data: handedOut.has(id) ? data.slice() : data };
      handedOut.add(id);
    }
    return { backend: this.backend, outputs, stats: this.#stats(maps.length, performance.now() - t0) };
  }

  #stats(steps, runMs) {
    const { info, attempts, checked, fallback } = this.parts;
    return { software: Boolean(info.software), adapter: info, attempts, runMs, steps,
      version: checked.requiredVersion, ...(fallback ? { fallback } : {}) };
  }

  /**
   * Run steps reading nothing back (a live view draws the device's value instead, present/):
   * the checks and poisoning of run(). Resolves with {steps, runMs}.
   * @param {number|Array<Record<string, ArrayLike<number>>|Map<number, ArrayLike<number>>>} [steps]
   */
  advance(steps = 1) {
    return this.#exclusive(async () => {
      this.#checkUsable();
      const { checked, program, resolved } = this.parts;
      const maps = normalizeSteps(checked, resolved.feeds, steps);
      const t0 = performance.now();
      try {
        await program.run(maps, []);
      } catch (err) {
        throw this.#fail(err, 'run');
      }
      return { steps: maps.length, runMs: performance.now() - t0 };
    });
  }

  /**
   * The node id of a kept (resident or carried-to) output, or VALIDATION.
   * @param {string} name @param {string} what
   */
  keptOutputId(name, what = 'download') {
    const { checked, resolved } = this.parts;
    const id = outputId(checked, name, what);
    if (!resolved.keep.includes(id)) {
      throw invalid(`${what}: output "${name}" is not resident (list it in resident, or carry it)`);
    }
    return id;
  }

  /**
   * Hand a kept output to `draw(program, id)` (a presenter's surface), in turn with this
   * session's runs; a failed draw poisons the session as a failed run does.
   * @param {string} name @param {(program: Program, id: number) => Promise<void>} draw
   */
  present(name, draw) {
    return this.#exclusive(async () => {
      this.#checkUsable();
      const id = this.keptOutputId(name, 'present');
      try {
        await draw(this.parts.program, id);
      } catch (err) {
        throw this.#fail(err, 'present');
      }
    });
  }

  /**
   * The current value of a resident (or carried-to) output, by name, or of a carried input, by id.
   * @param {string|number} key
   * @returns {Promise<TypedData>} typed by the tensor's dtype
   */
  download(key) {
    return this.#exclusive(() => this.#download(key));
  }

  async #download(key) {
    this.#checkUsable();
    const { checked, program, resolved } = this.parts;
    let id;
    if (typeof key === 'string') {
      id = outputId(checked, key, 'download');
      if (!resolved.keep.includes(id)) {
        throw invalid(`download: output "${key}" is not resident (list it in resident)`);
      }
    } else if (isIntId(key) && resolved.carry.has(key)) {
      id = key;
    } else {
      throw invalid(`download: ${JSON.stringify(key)} is neither a resident output name nor a ` +
        'carried input id');
    }
    let data;
    try {
      data = await program.download(id);
    } catch (err) {
      throw this.#fail(err, 'download');
    }
    this.#checkFinite(`download of ${JSON.stringify(key)}`, data, 'download', checked.byId.get(id));
    return data;
  }

  /** Release the backend program; always works, and every later call refuses with DISPOSED. */
  dispose() {
    if (this.#state === 'disposed') return;
    this.#state = 'disposed';
    try {
      this.parts.program.dispose();
    } catch {
      // Disposing a poisoned program may fail (lost device); the session is gone either way.
    }
    this.parts.onDispose?.(this);
  }
}
