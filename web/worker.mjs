// The notebook's engine, in a module Web Worker so the page never freezes: Pyodide, the gpulab
// wheel, the gpu-lab runtime and the Python adapter. Messages in: init, run, configure,
// last-graph. Messages out: progress, ready, backend, stdout/stderr, output, done, fatal.
import { loadPyodide } from './vendor/pyodide/pyodide.mjs';
import { createPythonGPUAdapter } from '../backends-js/src/python-adapter.mjs';
import { GpuLabError } from '../backends-js/src/errors.mjs';
import {
  cancelRequested, clearInterrupt, createWaitGate, interruptInFlight, requestStop, SLOT,
} from './stop-control.mjs';
import { RunOutput } from './run-output.mjs';
import { Animations } from './animator.mjs';
import { countBufferMaps } from '../backends-js/src/present/map-counter.mjs';
import { errorInfo } from '../backends-js/src/python-adapter.mjs';

/** After Stop: when the worker cancels a parked cell (sooner when no GPU request is in flight:
 * then nothing but a timer or a foreign promise can wake it), and when it gives up on it. */
const STOP_CANCEL_MS = 1500;
const STOP_IDLE_CANCEL_MS = 250;
const STOP_GRACE_MS = 8000;
const STOP_POLL_MS = 50;
/** How long a run waits for Python callbacks whose request already settled (bridge holds). */
const HOLD_WAIT_MS = 2000;

/** @type {any} */ let pyodide = null;
/** @type {any} */ let runtime = null;
/** @type {any} */ let adapter = null;
/** @type {Int32Array|null} */ let control = null; // see stop-control.mjs
/** @type {ReturnType<typeof createWaitGate>} */ let waitGate = createWaitGate(null);
/** Test hooks (set from the tests through the worker's scope): `stopOnDelivery: n` presses
 * Stop just before each of the next n GPU results is handed to Python, the worst moment. */
const testHooks = {
  stopOnDelivery: 0,
  /** The runtime's hooks (filled by the backend: loseDevice, webgpuStats, ...). */
  runtime: {},
  /** Install (once) and read the GPUBuffer map counts of this worker. */
  countMaps: () => ({ ...countBufferMaps(self) }),
};
self.gpulabTestHooks = testHooks;
/** The run whose stdout/outputs we are forwarding (one at a time: the page queues runs). */
let currentRun = null;
/** Cells waiting on a file picker (display.pick_file): request id -> resolve(File). */
const filePicks = new Map();
let nextFilePick = 1;
/** Last graph (and its browser result) per cell, for "Compare with native". */
const lastGraphs = new Map();

const post = (msg) => self.postMessage(msg);
/** Live views (display.animate): they outlive the cell that started them (animator.mjs). */
const animations = new Animations(post);
const now = () => performance.now();

async function timed(stage, label, work) {
  post({ type: 'progress', stage, label, state: 'running' });
  const t0 = now();
  try {
    const value = await work();
    post({ type: 'progress', stage, label, state: 'done', ms: now() - t0 });
    return value;
  } catch (err) {
    post({ type: 'progress', stage, label, state: 'failed', ms: now() - t0, error: String(err?.message ?? err) });
    throw err;
  }
}

/** A runtime stand-in that refuses every graph with why no backend opened. */
function unavailableRuntime(error) {
  const refuse = async () => { throw error; };
  return { backend: null, execute: refuse, prepare: refuse, dispose() {} };
}

/** What the page shows about the runtime in use: backend, adapter, software, attempts. */
function describe(rt, requested, error) {
  return {
    requested,
    backend: rt.backend,
    info: rt.info ?? null,
    software: Boolean(rt.info?.software),
    attempts: (rt.attempts ?? []).map(({ backend, ok, reason, software }) =>
      ({ backend, ok, reason: reason ?? null, software: Boolean(software) })),
    error: error ? { code: error.code ?? 'UNAVAILABLE', message: String(error.message ?? error) } : null,
  };
}

/** Wrap the runtime so every executed graph is remembered for its cell (compare view). */
function recording(rt) {
  return {
    get backend() { return rt.backend; },
    get info() { return rt.info; },
    get quotas() { return rt.quotas; }, // what a model loader checks a file against
    async execute(graph) {
      const result = await rt.execute(graph);
      if (currentRun) {
        lastGraphs.set(currentRun.cellId, { graph, result });
        currentRun.graphs += 1;
        currentRun.backend = result.backend;
      }
      return result;
    },
    async prepare(graph, options) {
      const session = await rt.prepare(graph, options);
      return {
        async run(steps) {
          const result = await session.run(steps);
          if (currentRun) {
            currentRun.graphs += 1; currentRun.backend = result.backend;
            currentRun.sessionRuns = (currentRun.sessionRuns ?? 0) + 1; // not comparable: see app.mjs
          }
          return result;
        },
        download: (key) => session.download(key),
        dispose: () => session.dispose(),
        parts: session.parts, // the checked graph: the adapter answers downloads with shapes
        live: session, // the runtime Session itself, for live views (animator.mjs)
      };
    },
    dispose() { rt.dispose?.(); },
  };
}

/** A refused software adapter points at the page's own switch (software-hint.mjs). */
const PAGE_SOFTWARE_HINT = 'tick "Allow software adapters" in the toolbar to use it';

async function openRuntime(backend, allowSoftware) {
  adapter?.dispose();
  runtime?.dispose?.();
  let error = null;
  try {
    const mod = await import('../backends-js/src/runtime.mjs');
    testHooks.runtime = {};
    runtime = await mod.createRuntime({ backend, allowSoftware, softwareHint: PAGE_SOFTWARE_HINT,
      hooks: testHooks.runtime });
  } catch (err) {
    error = err instanceof GpuLabError ? err
      : new GpuLabError('UNAVAILABLE', `backend ${backend}: ${err?.message ?? err}`);
    runtime = unavailableRuntime(error);
  }
  openAdapter();
  return describe(runtime, backend, error);
}

/** The Python adapter on the current runtime (registers `_gpulab_adapter`). */
function openAdapter() {
  resetPythonHolds(); // the old adapter's pending results are dropped: they never call back
  adapter = createPythonGPUAdapter(pyodide, recording(runtime), {
    allowExecute: true,
    maxPending: 16,
    shouldCancel: () => cancelRequested(control),
    waitGate,
    beforeDeliver: stopOnDeliveryHook,
  });
}

function stopOnDeliveryHook() {
  if (testHooks.stopOnDelivery > 0 && control && currentRun) {
    testHooks.stopOnDelivery -= 1;
    requestStop(control); // what the page's Stop button does
  }
}

/** Pyodide's stdout/stderr: exact bytes (text without a newline included) into the running
 * cell's throttled output (run-output.mjs); nothing is written when no run is current. */
function streamWriter(stream) {
  const decoder = new TextDecoder();
  return {
    write(buffer) {
      const text = decoder.decode(buffer, { stream: true });
      currentRun?.output.write(stream, text);
      return buffer.length;
    },
  };
}

/**
 * `time.sleep` in cells (web/py/cell_runner.py): wait on the Stop flag instead of a timer, so a
 * Stop wakes it at once (requestStop notifies that slot) and the SIGINT lands right after.
 * Answers 'slept', 'stopped', or 'unavailable' without a control buffer (no isolation: Python
 * then sleeps as usual).
 */
function interruptibleSleep(seconds) {
  if (!control) return 'unavailable';
  currentRun?.output.flush();
  const deadline = now() + Math.max(0, seconds) * 1000;
  for (let left = deadline - now(); left > 0 && !cancelRequested(control); left = deadline - now()) {
    Atomics.wait(control, SLOT.CANCEL, 0, left);
  }
  return cancelRequested(control) ? 'stopped' : 'slept';
}

/** The JS module Python's `display` helpers (and the cell runner) use. */
const notebookModule = {
  interrupt_in_flight: () => interruptInFlight(control),
  clear_interrupt: () => clearInterrupt(control),
  sleep: interruptibleSleep,
  emit(kind, payload) {
    if (!currentRun) return;
    const plain = payload?.toJs
      ? payload.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false })
      : payload;
    const transfer = plain?.pixels instanceof Uint8Array ? [plain.pixels.buffer] : [];
    post({ type: 'output', runId: currentRun.id, kind, payload: plain }, transfer);
  },
  /** display.animate: check and register a live view, show its canvas; {ok, value: id}. */
  animate(spec) {
    try {
      const plain = spec?.toJs ? spec.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false }) : spec;
      if (!currentRun) throw new GpuLabError('STATE', 'display.animate runs only inside a cell');
      const session = adapter.session(plain.session)?.live;
      if (!session) throw new GpuLabError('DISPOSED', `session ${plain.session} was disposed`);
      const anim = animations.create(currentRun.cellId, session, plain);
      notebookModule.emit('animation', anim.describe());
      return { ok: true, value: anim.id };
    } catch (err) {
      return { ok: false, error: errorInfo(err) };
    }
  },
  animation_stop: (id) => animations.stop({ animId: Number(id) }),
  /** display.pick_file: show a file picker in the running cell; resolves with the File chosen
   * (the page posts it: app.mjs), which Python then reads in chunks. */
  pick_file(spec) {
    const plain = spec?.toJs ? spec.toJs({ dict_converter: Object.fromEntries }) : spec;
    if (!currentRun) return Promise.reject(new GpuLabError('STATE', 'display.pick_file runs only inside a cell'));
    const id = nextFilePick++;
    const chosen = new Promise((resolve) => filePicks.set(id, resolve));
    notebookModule.emit('file', { id, accept: String(plain.accept ?? ''), label: String(plain.label ?? 'Choose a file') });
    return chosen;
  },
  /** An error the run cannot raise (a failed submit callback): shown in the cell, in order. */
  emit_error(error) {
    notebookModule.emit('error', error);
  },
};

/** Make this worker look like a browser without JS promise integration (Firefox, Safari
 * today), so that path can be tried and tested in Chromium: `?jspi=off`. */
function hideJspi() {
  delete WebAssembly.Suspending;
  delete WebAssembly.promising;
}

async function init({ backend, allowSoftware, controlBuffer, jspi = true }) {
  const t0 = now();
  if (!jspi) hideJspi();
  control = controlBuffer ? new Int32Array(controlBuffer) : null;
  waitGate = createWaitGate(control);
  pyodide = await timed('pyodide', 'Pyodide (Python 3 in WebAssembly)', () =>
    loadPyodide({ indexURL: new URL('./vendor/pyodide/', import.meta.url).href }));
  if (control) pyodide.setInterruptBuffer(control);
  pyodide.setStdout(streamWriter('stdout'));
  pyodide.setStderr(streamWriter('stderr'));
  await timed('packages', 'packages: gpulab wheel', async () => {
    // loadPackage reports failures (a wheel whose sha256 does not match the lock, a 404)
    // through errorCallback instead of throwing: collect them and fail loudly.
    const errors = [];
    await pyodide.loadPackage(['gpulab'], { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
    if (errors.length) throw new Error(`loading the gpulab wheel failed: ${errors.join('; ')}`);
    pyodide.registerJsModule('_notebook', notebookModule);
    // The page's Python helpers (web/py/), under the names the cells and the runner import
    // (torch.py: `import torch` is gpulab.torch in the page only, web/py/torch_shim.py).
    for (const [file, name] of [['animate.py', '_display_animate.py'], ['display.py', 'display.py'],
      ['page_env.py', '_page_env.py'], ['torch_shim.py', 'torch.py'],
      ['cell_runner.py', '_cell_runner.py']]) {
      const source = await fetch(new URL(`./py/${file}`, import.meta.url));
      pyodide.FS.writeFile(`/home/pyodide/${name}`, await source.text());
    }
    pyodide.runPython('import sys; sys.path.insert(0, "/home/pyodide"); import gpulab, display, _cell_runner');
  });
  const described = await timed('probe', `backend probe (${backend})`, () => openRuntime(backend, allowSoftware));
  post({
    type: 'ready',
    ms: now() - t0,
    backend: described,
    // can_run_sync() is only true inside an async run (where cells run), so ask there.
    canRunSync: Boolean(await pyodide.runPythonAsync('import pyodide.ffi as f\nf.can_run_sync()')),
    pyodideVersion: pyodide.version,
    allowSoftware,
    stop: Boolean(control),
  });
}

async function run({ runId, cellId, cellLabel, code }) {
  animations.stop({ cellId }); // a cell run again ends the views it started before
  const output = new RunOutput((batch) => post({ type: 'stream', runId, batch }));
  currentRun = { id: runId, cellId, graphs: 0, backend: null, output };
  waitGate.reset();
  // The page clears the Stop flags before it posts a run (so a Stop pressed before this
  // message arrives still counts); they are not cleared here.
  const t0 = now();
  resetPythonHolds(); // holds of an earlier run that timed out no longer count
  const watchdog = stopWatchdog();
  const outcome = await Promise.race([runToIdle(code, cellLabel), watchdog.expired]);
  watchdog.cancel();
  flushPythonStreams();
  output.end(); // text without a trailing newline belongs to this cell, not the next one
  const stopped = cancelRequested(control) || outcome.error?.type === 'KeyboardInterrupt';
  const done = {
    type: 'done', runId, ms: now() - t0, graphs: currentRun.graphs, backend: currentRun.backend, stopped,
    comparable: lastGraphs.has(cellId), sessionRuns: currentRun.sessionRuns ?? 0, ...outcome,
  };
  currentRun = null;
  filePicks.clear(); // a picker of a finished (or stopped) run answers nobody
  post(done);
}

/** A cell whose code returned but one of whose submit callbacks raised has failed (it said
 * "done" before); the errors themselves are already shown where they happened. */
function withCallbackFailures(outcome) {
  const env = pyodide.globals.get('_cell_runner')._page_env;
  const failures = env.take_callback_failures();
  env.destroy();
  if (!outcome.ok || failures === 0) return outcome;
  const message = `${failures} submit callback${failures === 1 ? '' : 's'} failed (shown above)`;
  return { ok: false, error: { type: 'CallbackError', message, traceback: '', line: null, shown: true } };
}

/** Python callbacks of settled requests that have not run yet (gpulab.pyodide_bridge.holds). */
function pythonHolds() {
  try {
    return Number(pyodide.runPython('import gpulab.pyodide_bridge as _b\n_b.holds()'));
  } catch {
    return 0;
  }
}

function resetPythonHolds() {
  try {
    pyodide?.runPython('import gpulab.pyodide_bridge as _b\n_b.reset_holds()');
  } catch { /* gpulab not loaded yet */ }
}

/** Python's own stdout/stderr buffers, into this run's output. */
function flushPythonStreams() {
  try {
    pyodide.runPython('import sys\nsys.stdout.flush()\nsys.stderr.flush()');
  } catch (err) {
    console.warn('flushing the cell output failed:', err);
  }
}

/** The cell's code, then every pending submit callback; resolves with the run's outcome. */
async function runToIdle(code, cellLabel) {
  try {
    await pyodide.loadPackagesFromImports(code, { messageCallback: () => {} });
    const runCell = pyodide.globals.get('_cell_runner').run_cell;
    const envelope = await runCell(code, `<${cellLabel}>`);
    const outcome = envelope.toJs({ dict_converter: Object.fromEntries });
    envelope.destroy();
    runCell.destroy();
    // submit() callbacks run after the cell's code returned, and may submit again: wait until
    // nothing is pending and their Python side has run. A settled request's Python callback can
    // come only after a later task (Pyodide's call into Python), so the bridge counts the
    // callbacks still to run (holds) and the run waits for them too (HOLD_WAIT_MS at most: a
    // result the adapter dropped never calls back).
    let holdSince = null;
    do {
      await adapter.whenIdle();
      await new Promise((resolve) => setTimeout(resolve, 0));
      holdSince = adapter.pending > 0 ? null : (holdSince ?? now());
    } while (adapter.pending > 0 || (pythonHolds() > 0 && now() - holdSince < HOLD_WAIT_MS));
    return withCallbackFailures(outcome);
  } catch (err) {
    return { ok: false, error: { type: err?.type ?? 'Error', message: String(err?.message ?? err), traceback: String(err?.message ?? err), line: null } };
  }
}

/**
 * The last resort that makes every Stop end the run. The timer only fires while Python is not
 * running (one thread), so if the run is still going STOP_CANCEL_MS after Stop, Python is parked
 * on an await (a promise that never settles; an interrupt that landed in asyncio's own code):
 * drop the SIGINT nobody took and cancel the cell's task (after STOP_IDLE_CANCEL_MS when no GPU
 * request is in flight: `await asyncio.sleep(30)` then stops within a second). If even that does
 * not end it within STOP_GRACE_MS and no GPU request is in flight (one in flight finishes first,
 * as documented), nothing can wake Python any more: report the run as abandoned, and the page
 * restarts Python, so that the abandoned code can never resume, change globals or print.
 */
function stopWatchdog() {
  let timer = null;
  let stopSeen = null;
  let cancelled = false;
  const expired = new Promise((resolve) => {
    timer = setInterval(() => {
      if (!cancelRequested(control)) return;
      stopSeen ??= now();
      const waited = now() - stopSeen;
      const cancelAfter = adapter.pending > 0 ? STOP_CANCEL_MS : STOP_IDLE_CANCEL_MS;
      if (!cancelled && waited >= cancelAfter) {
        cancelled = true;
        clearInterrupt(control);
        cancelRunningTask();
      }
      if (waited < STOP_GRACE_MS || adapter.pending > 0) return;
      clearInterval(timer);
      resolve({ ok: false, abandoned: true, error: { type: 'KeyboardInterrupt',
        message: `the run did not unwind within ${STOP_GRACE_MS / 1000} s of Stop and was ` +
          'abandoned (Python was waiting on something that cannot finish now); Python is ' +
          'restarted so that it can never resume: its variables are gone',
        traceback: '', line: null } });
    }, STOP_POLL_MS);
  });
  return { expired, cancel: () => clearInterval(timer) };
}

function cancelRunningTask() {
  try {
    const runner = pyodide.globals.get('_cell_runner');
    runner.cancel_running();
    runner.destroy();
  } catch (err) {
    console.warn('cancelling the stopped cell failed:', err);
  }
}

function lastGraph({ requestId, cellId }) {
  const entry = lastGraphs.get(cellId);
  post({ type: 'last-graph', requestId, graph: entry?.graph ?? null, result: entry?.result ?? null });
}

// Messages are handled one at a time, in order (a configure waits for a running cell).
let chain = Promise.resolve();
self.onmessage = ({ data }) => {
  const handlers = {
    init,
    run,
    'last-graph': lastGraph,
    configure: async (msg) => post({ type: 'backend', backend: await openRuntime(msg.backend, msg.allowSoftware) }),
  };
  const handler = handlers[data.type];
  if (data.type?.startsWith('anim-')) { animations.handle(data); return; } // never queued
  if (data.type === 'file') { filePicks.get(data.id)?.(data.file); filePicks.delete(data.id); return; } // a running cell waits on it
  if (!handler) return;
  if (data.type === 'last-graph') { handler(data); return; }
  chain = chain.then(() => handler(data)).catch((err) => {
    post({ type: 'fatal', message: String(err?.stack ?? err?.message ?? err) });
  });
};
