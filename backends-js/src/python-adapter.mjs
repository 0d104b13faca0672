// The bridge between Python in Pyodide (gpulab.pyodide_bridge) and a gpu-lab runtime.
//
// Python posts graph dicts whose tensor data are typed arrays (pyodide_bridge's to_js copies
// each buffer in one go; plain lists still work); this adapter runs them on the runtime (which
// validates them: Python does not) and answers with envelopes ({ok, value} / {ok: false,
// error: {code, message, node}}) that pyodide_bridge unwraps into results or GpuLabError.
// Three guarantees, each tested:
// - execution is granted explicitly: without `allowExecute: true` every request is refused
//   with PERMISSION;
// - pending requests are bounded: past `maxPending` a request is refused with PERMISSION, never
//   queued without bound;
// - after dispose() a late result is dropped: no callback runs, no promise settles (the Python
//   engine it would reach may be gone).
// Stop: besides `shouldCancel`, the page hands a `waitGate` whose enter()/leave() the bridge
// calls around each wait on a request, so the page never sends SIGINT while the answer is on its
// way through Pyodide's glue (an interrupt there is lost with the answer; web/stop-control.mjs).

import { GpuLabError } from './errors.mjs';
import { checkStepArgument, normalizeSteps } from './session.mjs';

/** Default name of the JS module Python imports (`import _gpulab_adapter`). */
export const PYTHON_MODULE_NAME = '_gpulab_adapter';

/** Steps per submission when a long session run is split so Stop can cancel between chunks. */
const DEFAULT_CHUNK_STEPS = 64;

/**
 * The runtime's error type, for refusals made here.
 * @param {import('./errors.mjs').ErrorCode} code @param {string} message
 */
export function adapterError(code, message) {
  return new GpuLabError(code, message, null);
}

/** {code, message, node} of any thrown value (runtime errors keep their code; others: BACKEND). */
export function errorInfo(err) {
  if (err && typeof err.code === 'string') {
    return { code: err.code, message: String(err.message ?? err), node: err.node ?? null };
  }
  return { code: 'BACKEND', message: String(err?.message ?? err), node: null };
}

/** Python dict (PyProxy), JSON text or plain object -> plain JS data. */
export function toPlain(value) {
  if (value && typeof value.toJs === 'function') {
    return value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
  }
  if (typeof value === 'string') {
    try {
      return JSON.parse(value);
    } catch (err) {
      throw adapterError('VALIDATION', `the graph text is not JSON: ${err.message}`);
    }
  }
  return value;
}

/** Release a PyProxy we were handed (a no-op for plain JS functions). */
function release(proxy) {
  if (proxy && typeof proxy.destroy === 'function') {
    try { proxy.destroy(); } catch { /* already destroyed */ }
  }
}

/**
 * Steps for session.run: a count, or a list of feed maps ({inputId: data}).
 * @returns {number|Array<Object>}
 */
function toSteps(steps) {
  const plain = toPlain(steps);
  if (typeof plain === 'number') return plain;
  if (!Array.isArray(plain)) {
    throw adapterError('VALIDATION', 'steps must be a step count or a list of feed maps');
  }
  return plain.map((feed) => (feed instanceof Map ? Object.fromEntries(feed) : feed));
}

/**
 * Chunks of at most `size` steps of a step list/count, made one at a time (a count is never
 * expanded: checkStepArgument bounds it first, and nothing is built per step here).
 */
function* chunkSteps(steps, size) {
  if (typeof steps === 'number') {
    for (let left = steps; left > 0; left -= size) yield Math.min(size, left);
    return;
  }
  for (let i = 0; i < steps.length; i += size) yield steps.slice(i, i + size);
}

/**
 * Every step of a run checked before the first chunk runs (all or nothing, errors name the
 * step's index in the whole run), where the session is a runtime Session (its checked graph in
 * `parts`); the steps go on as they are (a feed that is a typed array of its dtype is kept,
 * so the chunk's own check copies nothing).
 */
function checkedSteps(session, steps) {
  const parts = session.parts;
  if (parts?.checked && parts.resolved) {
    checkStepArgument(parts.resolved.feeds, steps);
    if (typeof steps !== 'number') normalizeSteps(parts.checked, parts.resolved.feeds, steps);
  }
  return steps;
}

/**
 * @typedef {{execute(graph: object): Promise<object>,
 *            prepare?(graph: object, options: object): Promise<object>,
 *            backend?: string}} Runtime
 * A prepared session should keep the runtime Session's `parts.checked` (a wrapper passes it
 * on): downloads are answered with the node's shape and dtype from it.
 * @typedef {{enter(): string, leave(): string}} WaitGate 'ok' | 'sigint' | 'stopped'
 * @typedef {{allowExecute?: boolean, maxPending?: number, shouldCancel?: () => boolean,
 *            chunkSteps?: number, moduleName?: string|null, waitGate?: WaitGate,
 *            beforeDeliver?: () => void}} AdapterOptions
 */

/** No Stop protocol (node, tests): every wait may start, none was stopped. */
const OPEN_GATE = Object.freeze({ enter: () => 'ok', leave: () => 'ok' });

/**
 * Connect Python (via `pyodide.registerJsModule`) to `runtime`.
 * @param {object|null} pyodide the Pyodide instance (null: no Python module is registered)
 * @param {Runtime} runtime from createRuntime()
 * @param {AdapterOptions} [options] shouldCancel: checked before each request and between
 *   chunks of a long session run (the page's Stop button; an interrupt cannot break a pending
 *   GPU promise, so this is how Stop reaches the GPU side). waitGate: see above.
 *   beforeDeliver: called just before each result or error is handed on (a test hook: the
 *   playground's tests press Stop there, the worst moment).
 */
export function createPythonGPUAdapter(pyodide, runtime, {
  allowExecute = false,
  maxPending = 16,
  shouldCancel = () => false,
  chunkSteps: chunkSize = DEFAULT_CHUNK_STEPS,
  moduleName = PYTHON_MODULE_NAME,
  waitGate = OPEN_GATE,
  beforeDeliver = () => {},
} = {}) {
  let disposed = false;
  let pending = 0;
  let dropped = 0;
  let nextSessionId = 1;
  /** @type {Map<number, object>} */
  const sessions = new Map();
  /** @type {Array<() => void>} */
  let idleWaiters = [];
  /** Callbacks of submits in flight: released on dispose, since they will never be called. */
  const held = new Set();

  function refusal() {
    if (disposed) return adapterError('DISPOSED', 'the GPU adapter was disposed');
    if (!allowExecute) {
      return adapterError('PERMISSION',
        'GPU execution not granted: the page created the adapter without allowExecute: true');
    }
    if (shouldCancel()) return adapterError('PERMISSION', 'stopped by the user (Stop)');
    if (pending >= maxPending) {
      return adapterError('PERMISSION', `too many pending GPU requests (limit ${maxPending}): ` +
        'wait for results before submitting more');
    }
    return null;
  }

  function settleIdle() {
    if (pending === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      waiters.forEach((resolve) => resolve());
    }
  }

  /**
   * Run `work` as one bounded request. The returned promise never settles once the adapter is
   * disposed (the late result is dropped and counted).
   * @template T @param {() => Promise<T>} work @returns {Promise<T>}
   */
  function request(work) {
    const refused = refusal();
    if (refused) return Promise.reject(refused);
    pending += 1;
    return new Promise((resolve, reject) => {
      Promise.resolve().then(work).then(
        (value) => finish(() => resolve(value)),
        (err) => finish(() => reject(err)),
      );
    });
  }

  function finish(deliver) {
    pending -= 1;
    if (disposed) { dropped += 1; settleIdle(); return; }
    try { beforeDeliver(); } catch { /* a hook must not lose the result */ }
    deliver();
    settleIdle();
  }

  const adapter = {
    get pending() { return pending; },
    get dropped() { return dropped; },
    get disposed() { return disposed; },
    get allowExecute() { return allowExecute; },
    get maxPending() { return maxPending; },
    runtime,
    waitGate,

    /** Run one graph; resolves with the runtime's result (plain JS). */
    execute(graph) {
      // the grant first: a page without it answers PERMISSION whatever it was sent
      const refused = refusal();
      if (refused) return Promise.reject(refused);
      let plain;
      try { plain = toPlain(graph); } catch (err) { return Promise.reject(err); }
      return request(() => runtime.execute(plain));
    },

    /**
     * Run one graph and call back: onResult(result) or onError({code, message, node}).
     * Refusals throw at once (nothing is queued). Callbacks (PyProxies) are released after use.
     * @returns {number} how many requests are now pending
     */
    submit(graph, onResult, onError) {
      const refused = refusal();
      if (refused) { release(onResult); release(onError); throw refused; }
      const callbacks = [onResult, onError];
      held.add(callbacks);
      const done = () => { held.delete(callbacks); release(onResult); release(onError); };
      // A callback that throws is the caller's bug: onResult's error goes to onError, and
      // nothing escapes as an unhandled rejection.
      const report = (err) => {
        try { if (onError) onError(errorInfo(err)); } catch (bug) { console.error(bug); }
      };
      adapter.execute(graph).then(
        (result) => {
          try { onResult(result); } catch (err) {
            report(adapterError('BACKEND', `onResult failed: ${err?.message ?? err}`));
          } finally { done(); }
        },
        (err) => { try { report(err); } finally { done(); } },
      );
      return pending;
    },

    /** Prepare a session; resolves with a handle {id, run, download, dispose}. */
    prepare(graph, options = {}) {
      const refused = refusal(); // the grant first, as execute
      if (refused) return Promise.reject(refused);
      if (typeof runtime.prepare !== 'function') {
        return Promise.reject(adapterError('UNAVAILABLE', 'this runtime has no prepared sessions'));
      }
      let plain;
      let opts;
      try { plain = toPlain(graph); opts = toPlain(options) ?? {}; } catch (err) {
        return Promise.reject(err);
      }
      return request(async () => {
        const session = await runtime.prepare(plain, opts);
        const id = nextSessionId++;
        sessions.set(id, session);
        return sessionHandle(id, session);
      });
    },

    /** The session prepared under a Python session id, or null (the page's live views draw
     * from it: web/animator.mjs). @param {number} id */
    session(id) {
      return sessions.get(Number(id)) ?? null;
    },

    /** Resolves when no request is pending (the notebook waits for callbacks before "done"). */
    whenIdle() {
      return pending === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },

    /** Stop delivering: pending results are dropped, sessions disposed, Python module removed. */
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const session of sessions.values()) {
        try { session.dispose(); } catch { /* disposing must not throw */ }
      }
      sessions.clear();
      for (const [onResult, onError] of held) { release(onResult); release(onError); }
      held.clear();
      if (pyodide && moduleName && typeof pyodide.unregisterJsModule === 'function') {
        try { pyodide.unregisterJsModule(moduleName); } catch { /* not registered */ }
      }
      settleIdle();
    },
  };

  function sessionHandle(id, session) {
    return {
      id,
      /** steps: count or list of feed maps; split into chunks so Stop can cancel between them. */
      run(steps) {
        let plainSteps;
        try { plainSteps = toSteps(steps); } catch (err) { return Promise.reject(err); }
        return request(async () => {
          let result;
          for (const chunk of chunkSteps(checkedSteps(session, plainSteps), chunkSize)) {
            if (shouldCancel()) throw adapterError('PERMISSION', 'stopped by the user (Stop)');
            result = await session.run(chunk);
          }
          return result;
        });
      },
      /** The value of a resident output (name) or carried input (id) as {shape, dtype, data}. */
      download(name) {
        // a name (string) or an id as it is: a name is not JSON text ("to_py" failed to parse)
        const key = typeof name === 'string' || typeof name === 'number' ? name : toPlain(name);
        return request(async () => keptEntry(session, key, await session.download(key)));
      },
      dispose() {
        if (sessions.delete(id)) session.dispose();
      },
    };
  }

  if (pyodide && moduleName) pyodide.registerJsModule(moduleName, pythonModule(adapter));
  return adapter;
}

/**
 * A downloaded value with its shape and dtype from the session's checked graph, so Python
 * needs no graph of its own (the runtime is where graphs are validated in the page).
 * @param {{parts?: {checked?: object}}} session @param {string|number} key @param {ArrayLike<number>} data
 */
function keptEntry(session, key, data) {
  const checked = session.parts?.checked;
  const id = typeof key === 'string' ? checked?.outputs.find((o) => o.name === key)?.id : key;
  const node = checked?.byId.get(id);
  return { shape: node ? [...node.shape] : [data.length], dtype: node?.dtype ?? 'float32', data };
}

/**
 * The functions Python sees as `_gpulab_adapter`: they never throw or reject; they answer
 * envelopes so pyodide_bridge can raise GpuLabError with the right code.
 */
function pythonModule(adapter) {
  const ok = (value) => ({ ok: true, value });
  const fail = (err) => ({ ok: false, error: errorInfo(err) });
  const envelope = (promise) => promise.then(ok, fail);
  const sessionOf = new Map();
  return {
    execute: (graph) => envelope(adapter.execute(graph)),
    submit(graph, onResult, onError) {
      // Wrappers carry destroy() so the adapter releases the Python callbacks when it is done.
      const done = () => { release(onResult); release(onError); };
      const wrappedResult = Object.assign((r) => onResult(ok(r)), { destroy: done });
      const wrappedError = Object.assign((e) => { if (onError) onError({ ok: false, error: e }); },
        { destroy: done });
      try {
        return ok(adapter.submit(graph, wrappedResult, wrappedError));
      } catch (err) {
        return fail(err);
      }
    },
    prepare: (graph, options) => envelope(adapter.prepare(graph, options).then((handle) => {
      sessionOf.set(handle.id, handle);
      return handle.id;
    })),
    session_run: (id, steps) => envelope(withSession(sessionOf, id, (s) => s.run(steps))),
    session_download: (id, name) => envelope(withSession(sessionOf, id, (s) => s.download(name))),
    session_dispose(id) {
      const handle = sessionOf.get(id);
      sessionOf.delete(id);
      if (handle) handle.dispose();
    },
    pending: () => adapter.pending,
    enter_wait: () => adapter.waitGate.enter(),
    leave_wait: () => adapter.waitGate.leave(),
    backend: () => adapter.runtime?.backend ?? null,
    /** The runtime's device memory quota in bytes (quotas.memoryBytes), null if unknown. */
    memory_quota: () => adapter.runtime?.quotas?.limit?.memoryBytes ?? null,
  };
}

function withSession(sessionOf, id, use) {
  const handle = sessionOf.get(id);
  if (!handle) return Promise.reject(adapterError('DISPOSED', `session ${id} was disposed`));
  return use(handle);
}
