// createRuntime: choose a backend (recording every attempt and its reason), then validate and
// run graphs on it. Bad graphs are refused by validateGraph before any backend work.
import { GpuLabError, asBackendError } from './errors.mjs';
import { validateGraph } from './validate.mjs';
import { BACKENDS, BACKEND_ORDER, openBackend } from './backends/index.mjs';
import { Session, checkInputsProvided, resolveSessionOptions } from './session.mjs';

export { GpuLabError } from './errors.mjs';
export { validateGraph } from './validate.mjs';
export { BACKEND_ORDER } from './backends/index.mjs';

/**
 * @typedef {{backend: string, ok: boolean, reason?: string, software?: boolean}} Attempt
 * @typedef {{failNextRun?: boolean|string, registry?: Record<string, () => Promise<any>>,
 *   [hook: string]: unknown}} Hooks
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

/** Outputs by name from values by id; a value shared by two names is copied for the second. */
function namedOutputs(checked, values) {
  const used = new Set();
  /** @type {Record<string, {shape: number[], dtype: 'float32', data: Float32Array}>} */
  const outputs = {};
  for (const { name, id } of checked.outputs) {
    const data = values.get(id);
    outputs[name] = { shape: [...checked.byId.get(id).shape], dtype: 'float32',
      data: used.has(id) ? data.slice() : data };
    used.add(id);
  }
  return outputs;
}

/** Errors from backend work become BACKEND unless the backend already said what they are. */
function backendFailure(err, context) {
  return err instanceof GpuLabError ? err : asBackendError(err, context);
}

/**
 * Create a runtime on one backend.
 * @param {RuntimeOptions} [options]
 */
export async function createRuntime(options = {}) {
  const hooks = options.hooks ?? {};
  const { opened, attempts } = await chooseBackend({ ...options, hooks });
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
      let program;
      try {
        program = await opened.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
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
      const lost = checked.outputs.find((o) => !(values.get(o.id) instanceof Float32Array));
      if (lost) {
        throw new GpuLabError('BACKEND', `the ${opened.name} backend returned no value for ` +
          `output "${lost.name}"`);
      }
      return {
        backend: opened.name,
        outputs: namedOutputs(checked, values),
        stats: { software: Boolean(info.software), adapter: info, attempts, validateMs,
          runMs: performance.now() - t0, version: checked.requiredVersion },
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
      let program;
      try {
        program = await opened.prepare(checked,
          { feeds: resolved.feeds, carry: resolved.carry, keep: resolved.keep });
      } catch (err) {
        throw backendFailure(err, 'prepare');
      }
      const session = new Session({ backendName: opened.name, info, attempts, checked, program,
        resolved, hooks, onDispose: (s) => sessions.delete(s) });
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
      opened.dispose?.();
    },
  };
}
