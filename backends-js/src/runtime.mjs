// createRuntime: choose a backend (backends/choice.mjs, recording every attempt and its
// reason), then validate and run graphs on it. Bad graphs are refused by validateGraph before
// any backend work; a graph the backend has no kernel for is refused with UNSUPPORTED (its
// supports()) before any device work. `auto` picks, per graph, the first backend of
// BACKEND_ORDER that is available and supports the graph, and each result says which ones it
// passed over and why.
import { GpuLabError, asBackendError } from './errors.mjs';
import { validateGraph } from './validate.mjs';
import { isTypedOf } from './dtypes.mjs';
import { BackendSet, chooseBackend } from './backends/choice.mjs';
import { Session, checkInputsProvided, resolveSessionOptions } from './session.mjs';
import { createQuotas } from './quotas.mjs';
import { checkCost } from './cost.mjs';
import { lowerGraph, prepareLowered } from './lowering.mjs';

export { GpuLabError } from './errors.mjs';
export { validateGraph } from './validate.mjs';
export { BACKEND_ORDER } from './backends/index.mjs';

/**
 * @typedef {import('./backends/choice.mjs').Attempt} Attempt
 * @typedef {import('./backends/choice.mjs').Hooks} Hooks
 * @typedef {import('./backends/choice.mjs').RuntimeOptions} RuntimeOptions
 */

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
  const quotas = createQuotas(options.quotas); // what untrusted code may hold
  const hooks = options.hooks ?? {};
  const { opened, attempts } = await chooseBackend({ ...options, hooks });
  const backends = new BackendSet({ ...options, hooks }, opened, attempts);
  const info = { ...opened.info };
  let disposed = false;
  /** @type {Set<Session>} */
  const sessions = new Set();
  /** Programs of executes in flight: dispose() stops them between nodes (step-gate.mjs). */
  const running = new Set();

  const ensureLive = () => {
    if (disposed) throw new GpuLabError('DISPOSED', 'the runtime was disposed');
  };
  /** After an await: a runtime disposed meanwhile releases what was made and refuses. */
  const stillLive = (program) => {
    if (!disposed) return;
    try { program.dispose(); } catch { /* the backend is gone already */ }
    ensureLive();
  };

  /** Validate, timing it. @param {unknown} graph */
  const check = (graph) => {
    const t0 = performance.now();
    const checked = validateGraph(graph);
    return { checked, validateMs: performance.now() - t0 };
  };

  /** execute() past validation and the quotas. */
  const executeChecked = async (checked, validateMs) => {
    const t0 = performance.now();
    const chosen = await backends.choose(checked);
    ensureLive();
    const backend = chosen.backend;
    checkCost(checked, backend.name, 'execute', quotas.maxCostS); // before any backend work
    let program;
    try {
      program = await prepareLowered(backend, checked, { feeds: [], carry: new Map(), keep: [] });
    } catch (err) {
      throw backendFailure(err, 'prepare');
    }
    stillLive(program);
    let values;
    try {
      if (hooks.failNextRun) {
        hooks.failNextRun = false;
        throw new Error('test hook failNextRun: injected failure');
      }
      running.add(program);
      values = await program.run([new Map()], [...new Set(checked.outputs.map((o) => o.id))]);
    } catch (err) {
      ensureLive(); // stopped by dispose(): DISPOSED, not a backend failure
      throw backendFailure(err, 'run');
    } finally {
      running.delete(program);
      program.dispose();
    }
    ensureLive(); // disposed while it ran: the result is not handed out
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
  };

  /** prepare() past validation and the quotas; `release` frees the session's share. */
  const prepareChecked = async (checked, resolved, release) => {
    const chosen = await backends.choose(checked);
    ensureLive();
    const backend = chosen.backend;
    checkCost(checked, backend.name, 'prepare', quotas.maxCostS); // the cost of one step
    let program;
    try {
      program = await prepareLowered(backend, checked,
        { feeds: resolved.feeds, carry: resolved.carry, keep: resolved.keep });
    } catch (err) {
      ensureLive();
      throw backendFailure(err, 'prepare');
    }
    stillLive(program);
    const { adapter, attempts: tried, fallback } = runStats(backend, chosen);
    const session = new Session({ backendName: backend.name, info: adapter, attempts: tried,
      fallback, checked, program, resolved, hooks,
      onDispose: (s) => { sessions.delete(s); release(); } });
    sessions.add(session);
    return session;
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
      const release = quotas.reserve(checked, 'execute');
      try {
        return await executeChecked(checked, validateMs);
      } finally {
        release();
      }
    },

    /**
     * Validate and prepare a session: feeds, carry, resident and read-back outputs.
     * @param {unknown} graph @param {import('./session.mjs').SessionOptions} [sessionOptions]
     */
    async prepare(graph, sessionOptions = {}) {
      ensureLive();
      const { checked } = check(graph);
      const resolved = resolveSessionOptions(checked, sessionOptions);
      const release = quotas.reserve(checked, 'prepare'); // held until the session is disposed
      try {
        return await prepareChecked(checked, resolved, release);
      } catch (err) {
        release();
        throw err;
      }
    },

    /** The quotas ({limit, used}) of this runtime: docs/protocol.md "Limits". */
    get quotas() {
      return { limit: quotas.limit, used: quotas.used, maxCostS: quotas.maxCostS };
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
      return planner.planGraph(lowerGraph(checked)?.checked ?? checked, planOptions);
    },

    /** Release the backend and every open session; later calls refuse with DISPOSED. */
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const s of [...sessions]) s.dispose();
      for (const program of running) program.dispose(); // an execute in flight stops
      backends.dispose();
    },
  };
}
