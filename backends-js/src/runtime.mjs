// createRuntime: choose a backend (recording every attempt and its reason), then validate and
// run graphs on it. Bad graphs are refused by validateGraph before any backend work; a graph
// the backend has no kernel for is refused with UNSUPPORTED (its supports()) before any device
// work. `auto` picks, per graph, the first backend of BACKEND_ORDER that is available and
// supports the graph, and each result says which ones it passed over and why.
import { GpuLabError, asBackendError } from './errors.mjs';
import { unsupportedError } from './kernels.mjs';
import { validateGraph } from './validate.mjs';
import { isTypedOf } from './dtypes.mjs';
import { BACKENDS, BACKEND_ORDER, openBackend } from './backends/index.mjs';
import { Session, checkInputsProvided, resolveSessionOptions } from './session.mjs';

export { GpuLabError } from './errors.mjs';
export { validateGraph } from './validate.mjs';
export { BACKEND_ORDER } from './backends/index.mjs';

/**
 * @typedef {{backend: string, ok: boolean, reason?: string, software?: boolean,
 *   code?: string}} Attempt
 * @typedef {{failNextRun?: boolean|string, registry?: Record<string, () => Promise<any>>,
 *   withoutKernels?: string[]|Record<string, string[]>, [hook: string]: unknown}} Hooks
 *   withoutKernels: ops every backend (an array) or the named backends (an object) answer as
 *   having no kernel for, so a test can see an UNSUPPORTED refusal and auto's fallback
 * @typedef {{backend?: 'auto'|'webgpu'|'webgl2'|'wasm'|'cpu', allowSoftware?: boolean,
 *   strict?: boolean, hooks?: Hooks}} RuntimeOptions
 */

/**
 * Open the requested backend, or the first of BACKEND_ORDER that opens for 'auto'.
 * @param {RuntimeOptions} options
 */
async function chooseBackend({ backend = 'auto', allowSoftware = false, strict = false, hooks = {} }) {
  const registry = hooks.registry ?? BACKENDS;
  const names = backend === 'auto' ? BACKEND_ORDER : [backend];
  /** @type {Attempt[]} */
  const attempts = [];
  for (const name of names) {
    try {
      const opened = await openBackend(name, { allowSoftware, hooks }, registry);
      attempts.push({ backend: name, ok: true, software: Boolean(opened.info?.software) });
      return { opened, attempts };
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      attempts.push({ backend: name, ok: false, reason });
      // An explicit backend is never downgraded; strict refuses any fallback.
      if (backend !== 'auto' || strict) throw unavailable(backend, attempts, err);
    }
  }
  throw unavailable(backend, attempts, null);
}

/** @param {string} requested @param {Attempt[]} attempts @param {unknown} cause */
function unavailable(requested, attempts, cause) {
  const list = attempts.map((a) => `${a.backend}: ${a.ok ? 'ok' : a.reason}`).join('; ');
  return new GpuLabError('UNAVAILABLE', `backend "${requested}" is not available (${list})`, null,
    { cause });
}

/**
 * The backends a runtime may run graphs on: the one chosen at creation, and for `auto` the
 * later ones of BACKEND_ORDER, opened the first time a graph needs them (a failed open is
 * remembered, not retried).
 */
class BackendSet {
  /** @param {RuntimeOptions & {hooks: Hooks}} options @param {any} primary @param {Attempt[]} attempts */
  constructor(options, primary, attempts) {
    this.options = options;
    this.auto = (options.backend ?? 'auto') === 'auto';
    /** @type {Map<string, any>} name -> opened backend, or the Attempt that failed to open it */
    this.opened = new Map();
    for (const a of attempts) if (!a.ok) this.opened.set(a.backend, a);
    this.opened.set(primary.name, primary);
    this.primary = primary;
  }

  /** @param {string} name @returns {Promise<any>} a backend, or the failed Attempt */
  async open(name) {
    if (!this.opened.has(name)) {
      const { allowSoftware = false, hooks } = this.options;
      try {
        this.opened.set(name, await openBackend(name, { allowSoftware, hooks },
          hooks.registry ?? BACKENDS));
      } catch (err) {
        this.opened.set(name, { backend: name, ok: false,
          reason: err instanceof Error ? err.message : String(err) });
      }
    }
    return this.opened.get(name);
  }

  /**
   * The backend to run `checked` on, with the per-graph attempts. An explicit backend (and
   * strict auto, whose first choice is the only one) refuses with UNSUPPORTED instead of
   * falling back.
   * @param {any} checked
   * @returns {Promise<{backend: any, attempts: Attempt[], fallback: string|null}>}
   */
  async choose(checked) {
    const names = this.auto && !this.options.strict
      ? BACKEND_ORDER.slice(BACKEND_ORDER.indexOf(this.primary.name)) : [this.primary.name];
    /** @type {Attempt[]} */
    const attempts = this.auto ? BACKEND_ORDER.slice(0, BACKEND_ORDER.indexOf(this.primary.name))
      .map((n) => this.opened.get(n)).filter(Boolean).map((a) => ({ ...a })) : [];
    /** @type {GpuLabError|null} */
    let refusal = null;
    /** @type {GpuLabError|null} */
    let last = null;
    for (const name of names) {
      const backend = await this.open(name);
      if (backend.ok === false) {
        attempts.push({ ...backend });
        continue;
      }
      const { ok, missing } = await supportOf(backend, checked, this.options.hooks);
      if (ok) {
        attempts.push({ backend: name, ok: true, software: Boolean(backend.info?.software) });
        return { backend, attempts, fallback: refusal && `${refusal.message}; ran on ${name}` };
      }
      last = unsupportedError(name, missing);
      refusal ??= last;
      attempts.push({ backend: name, ok: false, code: 'UNSUPPORTED',
        reason: `UNSUPPORTED: ${last.message}` });
    }
    // No backend ran it: the last refusal says why, with every other backend passed over.
    if (last) throw withPassedOver(last, attempts);
    throw unavailable(this.options.backend ?? 'auto', attempts, null);
  }

  dispose() {
    for (const b of this.opened.values()) if (b.ok !== false) b.dispose?.();
  }
}

/**
 * A backend's answer for one graph; a backend module without supports() is taken at its word
 * that it runs every graph (test doubles). hooks.withoutKernels hides kernels from it.
 * @param {any} backend @param {any} checked @param {Hooks} hooks
 * @returns {Promise<{ok: boolean, missing: import('./kernels.mjs').Missing[]}>}
 */
async function supportOf(backend, checked, hooks) {
  if (typeof backend.supports !== 'function') return { ok: true, missing: [] };
  const hidden = hooks.withoutKernels;
  const without = Array.isArray(hidden) ? hidden : (hidden?.[backend.name] ?? []);
  return backend.supports(checked, { without });
}

/** The last refusal of auto, listing the other backends passed over. */
function withPassedOver(/** @type {GpuLabError} */ error, /** @type {Attempt[]} */ attempts) {
  const others = attempts.filter((a) => a.reason !== `UNSUPPORTED: ${error.message}`);
  if (!others.length) return error;
  const list = others.map((a) => `${a.backend}: ${a.reason}`).join('; ');
  return new GpuLabError('UNSUPPORTED', `${error.message} (passed over: ${list})`, error.node);
}

/** Outputs by name from values by id; a value shared by two names is copied for the second. */
function namedOutputs(checked, values) {
  const used = new Set();
  /** @type {Record<string, import('./session.mjs').OutputValue>} */
  const outputs = {};
  for (const { name, id } of checked.outputs) {
    const data = values.get(id);
    const node = checked.byId.get(id);
    outputs[name] = { shape: [...node.shape], dtype: node.dtype,
      data: used.has(id) ? data.slice() : data };
    used.add(id);
  }
  return outputs;
}

/**
 * The backend part of a result's stats: the backend that ran, every backend passed over for
 * this graph, and (where auto fell back because one had no kernel) why.
 * @param {any} backend @param {{attempts: Attempt[], fallback: string|null}} chosen
 */
function runStats(backend, { attempts, fallback }) {
  const adapter = { ...backend.info };
  return { software: Boolean(adapter.software), adapter, attempts,
    ...(fallback ? { fallback } : {}) };
}

/** Errors from backend work become BACKEND unless the backend already said what they are. */
function backendFailure(err, context) {
  return asBackendError(err, context, { keepAll: true });
}

/**
 * Create a runtime on one backend.
 * @param {RuntimeOptions} [options]
 */
export async function createRuntime(options = {}) {
  const hooks = options.hooks ?? {};
  const { opened, attempts } = await chooseBackend({ ...options, hooks });
  const backends = new BackendSet({ ...options, hooks }, opened, attempts);
  const info = { ...opened.info };
  let disposed = false;
  /** @type {Set<Session>} */
  const sessions = new Set();

  const ensureLive = () => {
    if (disposed) throw new GpuLabError('DISPOSED', 'the runtime was disposed');
  };

  /** Validate, timing it. @param {unknown} graph */
  const check = (graph) => {
    const t0 = performance.now();
    const checked = validateGraph(graph);
    return { checked, validateMs: performance.now() - t0 };
  };

  return {
    backend: opened.name,
    info,
    attempts,

    /**
     * Validate and run a graph once, reading back every output.
     * @param {unknown} graph
     */
    async execute(graph) {
      ensureLive();
      const { checked, validateMs } = check(graph);
      checkInputsProvided(checked, new Set());
      const t0 = performance.now();
      const chosen = await backends.choose(checked);
      const backend = chosen.backend;
      let program;
      try {
        program = await backend.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
      } catch (err) {
        throw backendFailure(err, 'prepare');
      }
      let values;
      try {
        if (hooks.failNextRun) {
          hooks.failNextRun = false;
          throw new Error('test hook failNextRun: injected failure');
        }
        values = await program.run([new Map()], [...new Set(checked.outputs.map((o) => o.id))]);
      } catch (err) {
        throw backendFailure(err, 'run');
      } finally {
        program.dispose();
      }
      // every output must come back as a typed array of its node's dtype
      const lost = checked.outputs.find((o) => !isTypedOf(values.get(o.id),
        checked.byId.get(o.id).dtype));
      if (lost) {
        throw new GpuLabError('BACKEND', `the ${backend.name} backend returned no value for ` +
          `output "${lost.name}" (a typed array of dtype ${checked.byId.get(lost.id).dtype})`);
      }
      return {
        backend: backend.name,
        outputs: namedOutputs(checked, values),
        stats: { ...runStats(backend, chosen), validateMs, runMs: performance.now() - t0,
          version: checked.requiredVersion },
      };
    },

    /**
     * Validate and prepare a session: feeds, carry, resident and read-back outputs.
     * @param {unknown} graph @param {import('./session.mjs').SessionOptions} [sessionOptions]
     */
    async prepare(graph, sessionOptions = {}) {
      ensureLive();
      const { checked } = check(graph);
      const resolved = resolveSessionOptions(checked, sessionOptions);
      const chosen = await backends.choose(checked);
      const backend = chosen.backend;
      let program;
      try {
        program = await backend.prepare(checked,
          { feeds: resolved.feeds, carry: resolved.carry, keep: resolved.keep });
      } catch (err) {
        throw backendFailure(err, 'prepare');
      }
      const { adapter, attempts: tried, fallback } = runStats(backend, chosen);
      const session = new Session({ backendName: backend.name, info: adapter, attempts: tried,
        fallback, checked, program, resolved, hooks, onDispose: (s) => sessions.delete(s) });
      sessions.add(session);
      return session;
    },

    /**
     * The GPU plan of a graph (planner.mjs, loaded on first use).
     * @param {unknown} graph @param {object} [planOptions]
     */
    async plan(graph, planOptions = {}) {
      ensureLive();
      const { checked } = check(graph);
      let planner;
      try {
        planner = await import('./planner.mjs');
      } catch (err) {
        throw new GpuLabError('UNAVAILABLE', `the planner (planner.mjs) could not be loaded: ` +
          `${err instanceof Error ? err.message : err}`, null, { cause: err });
      }
      return planner.planGraph(checked, planOptions);
    },

    /** Release the backend and every open session; later calls refuse with DISPOSED. */
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const s of [...sessions]) s.dispose();
      backends.dispose();
    },
  };
}
