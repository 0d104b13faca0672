// The page: starts the worker, shows loading progress and the backend in use, runs cells one at
// a time (a queue), renders their outputs, and drives Stop and "Compare with native".
import { Notebook, showMarkdown } from './notebook.mjs';
import { el } from './render.mjs';
import { clearOutput, emit, emitLine } from './cell-output.mjs';
import { EXAMPLES } from './examples.mjs';
import { createNotebooks } from './notebooks-ui.mjs';
import { showComparison } from './compare-view.mjs';
import { createControl, requestStop, resetControl } from './stop-control.mjs';
import { createLiveViews } from './animate.mjs';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const ui = {
  backend: /** @type {HTMLSelectElement} */ ($('backend')),
  software: /** @type {HTMLInputElement} */ ($('allow-software')),
  runAll: /** @type {HTMLButtonElement} */ ($('run-all')),
  stop: /** @type {HTMLButtonElement} */ ($('stop')),
  progress: $('progress'),
  backendStatus: $('backend-status'),
  attempts: $('attempts'),
  stopNote: $('stop-note'),
};

// Stop: Pyodide's interrupt buffer, the adapter's cancel flag and the wait phase that says when
// SIGINT is safe (stop-control.mjs). A SharedArrayBuffer: needs cross-origin isolation (COOP/COEP).
const control = createControl();

/** @type {Worker} */ let worker;
const params = new URLSearchParams(location.search);
const state = {
  ready: false,
  nextRunId: 1,
  /** @type {Array<{cell: any, runId: number}>} */ queue: [],
  /** @type {{cell: any, runId: number, started: number}|null} */ running: null,
  /** @type {Map<number, (msg: any) => void>} */ replies: new Map(),
  nextRequest: 1,
  backendDescription: null,
  /** @type {{from: string, to: string}|null} the last backend switch (it disposes sessions) */
  lastSwitch: null,
};

const notebook = new Notebook($('notebook'), {
  onRun: enqueue, onCompare: compareCell, onDelete: (removed) => notebooks.cellDeleted(removed),
});
const notebooks = createNotebooks({ notebook, examples: EXAMPLES, isBusy: () => Boolean(state.running) });
globalThis.gpulabNotebook = notebook; // for debugging from the console
/** Live views (display.animate): they run on after their cell; Stop and a re-run end them. */
const liveViews = createLiveViews(() => worker);
globalThis.gpulabAnimations = liveViews; // the tests read frame logs here
/** Stop is on while a cell runs (with the Stop control) or a live view runs. */
const updateStop = () => { ui.stop.disabled = !(state.running && control) && !liveViews.running; };

// ---------------------------------------------------------------------------------------------
// Loading and backend status

function showProgress({ stage, label, state: st, ms, error }) {
  let item = ui.progress.querySelector(`[data-stage="${stage}"]`);
  if (!item) {
    item = el('li', { 'data-stage': stage });
    ui.progress.append(item);
  }
  item.className = st;
  const time = ms !== undefined ? ` — ${formatMs(ms)}` : '';
  item.textContent = `${label}${time}${error ? `: ${error}` : ''}`;
}

function formatMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

/** "Backend: webgpu (software adapter: SwiftShader — …)" plus every attempt with its reason. */
function showBackend(desc) {
  state.backendDescription = desc;
  ui.backendStatus.replaceChildren();
  ui.backendStatus.classList.toggle('error', Boolean(desc.error));
  if (desc.error) {
    ui.backendStatus.append(`Backend ${desc.requested} unavailable: ${desc.error.message}`);
  } else {
    const adapter = desc.info?.description ? ` — ${desc.info.description}` : '';
    ui.backendStatus.append(`Backend in use: ${desc.backend}${adapter}`);
    if (desc.software) {
      const name = desc.info?.description || desc.info?.vendor || 'software renderer';
      ui.backendStatus.append(el('span', { class: 'software',
        text: `software adapter: ${name} — results are correct but not GPU speed` }));
    }
  }
  ui.attempts.replaceChildren(...desc.attempts.map((a) => el('li', {
    class: a.ok ? 'ok' : 'failed',
    text: a.ok ? `${a.backend}: used${a.software ? ' (software)' : ''}`
      : `${a.backend}: ${String(a.reason).replace(`${a.backend}: `, '')}`,
  })));
}

function configureBackend() {
  if (!state.ready) return;
  const from = state.backendDescription?.backend ?? state.backendDescription?.requested;
  state.lastSwitch = { from: from ?? 'none', to: ui.backend.value };
  ui.backendStatus.textContent = `Opening ${ui.backend.value}…`;
  worker.postMessage({ type: 'configure', backend: ui.backend.value, allowSoftware: ui.software.checked });
}

// ---------------------------------------------------------------------------------------------
// Running cells

function enqueue(cell) {
  if (cell.kind === 'markdown') { showMarkdown(cell, true); notebook.onChange(); return; }
  if (state.queue.some((q) => q.cell === cell) || state.running?.cell === cell) return;
  const runId = state.nextRunId++;
  state.queue.push({ cell, runId });
  cell.prompt.textContent = '[queued]';
  cell.prompt.className = 'prompt';
  pump();
}

function pump() {
  if (!state.ready || state.running || state.queue.length === 0) return;
  const { cell, runId } = state.queue.shift();
  state.running = { cell, runId, started: performance.now() };
  liveViews.endCell(cell);
  clearOutput(cell);
  cell.compare.replaceChildren();
  cell.compare.hidden = true;
  cell.prompt.textContent = '[running]';
  cell.prompt.className = 'prompt running';
  cell.root.setAttribute('aria-busy', 'true');
  if (control) resetControl(control);
  ui.stop.disabled = !control;
  worker.postMessage({ type: 'run', runId, cellId: cell.id, cellLabel: cell.label.toLowerCase(), code: cell.source() });
}

/** A session that a backend switch disposed answers only "session N was disposed": say why. */
function explainDisposed(cell, error) {
  const { lastSwitch } = state;
  if (!lastSwitch || !/DISPOSED/.test(`${error?.type} ${error?.message}`) ||
    !/session \d+ was disposed/.test(error?.message ?? '')) return;
  emitLine(cell, `Switching the backend (${lastSwitch.from} → ${lastSwitch.to}) disposed every ` +
    'prepared session: sessions live in one backend\'s runtime. Run the cell that calls ' +
    'g.prepare(...) again to prepare it on the new backend.', 'hint', 'note');
}

/** After an error the queued cells are not run (as Jupyter's Run all): they may need its result. */
function skipQueued(cell) {
  if (state.queue.length === 0) return;
  const skipped = state.queue.length;
  for (const q of state.queue) q.cell.prompt.textContent = '[ ]';
  state.queue = [];
  emitLine(cell, `stopped at this error: ${skipped} queued cell${skipped === 1 ? ' was' : 's were'} not run`,
    'summary skipped', 'status');
}

function stop() {
  liveViews.stopAll();
  if (!control || !state.running) return;
  for (const { cell } of state.queue) cell.prompt.textContent = '[ ]';
  state.queue = [];
  requestStop(control); // cancel flag, and SIGINT unless Python waits on the GPU
}

function outputOf(runId) {
  return state.running?.runId === runId ? state.running.cell : null;
}

function finishRun(msg) {
  const cell = outputOf(msg.runId);
  if (!cell) return;
  cell.runs += 1;
  cell.root.removeAttribute('aria-busy');
  const stopped = !msg.ok && msg.stopped;
  if (stopped) {
    const where = msg.error?.line ? ` at line ${msg.error.line}` : '';
    emitLine(cell, `Stopped by the user${where} (${msg.error?.type}: ${msg.error?.message || 'interrupted'}).`,
      'error', 'alert');
  } else if (!msg.ok && !msg.restarted && !msg.error?.shown) {
    emit(cell, 'error', msg.error);
    explainDisposed(cell, msg.error);
  }
  // "graph run": wasm and cpu are not GPUs (it said "1 GPU run on wasm")
  const graphs = msg.graphs ? `, ${msg.graphs} graph run${msg.graphs === 1 ? '' : 's'} on ${msg.backend ?? state.backendDescription?.backend}` : '';
  const outcome = msg.restarted ? 'restarted' : stopped ? 'stopped' : msg.ok ? 'done' : 'error';
  const why = msg.error?.shown ? `: ${msg.error.message}` : '';
  emitLine(cell, `${outcome} after ${formatMs(msg.ms)}${graphs}${why}`);
  if (!msg.ok && !stopped && !msg.restarted) skipQueued(cell);
  cell.prompt.textContent = `[${cell.runs}] ${formatMs(msg.ms)}`;
  cell.prompt.className = `prompt${msg.ok ? '' : ' failed'}`;
  cell.root.dataset.status = outcome;
  cell.compareButton.disabled = !msg.comparable;
  explainCompare(cell, msg);
  state.running = null;
  updateStop();
  notebook.onChange(); // its output is kept too
  // A run Stop could not unwind may still resume one day (a timer, a promise): only a fresh
  // interpreter guarantees it never changes globals or prints into another cell.
  if (msg.abandoned) restart();
  else pump();
}

function onOutput({ runId, kind, payload }) {
  const cell = outputOf(runId);
  if (!cell) return;
  if (kind === 'animation') { liveViews.start(cell, payload); updateStop(); return; } // live: not kept
  emit(cell, kind, payload);
}

// A file chosen in a cell's picker (display.pick_file, render.mjs) goes to the worker that waits
// on it; the File itself is posted (structured clone: the bytes are read there, in chunks).
document.addEventListener('gpulab-file', ({ detail }) => {
  worker.postMessage({ type: 'file', id: detail.id, file: detail.file });
});

// ---------------------------------------------------------------------------------------------
// Compare with native

function request(type, fields) {
  const requestId = state.nextRequest++;
  return new Promise((resolve) => {
    state.replies.set(requestId, resolve);
    worker.postMessage({ type, requestId, ...fields });
  });
}

const COMPARE_TITLE = 'Run this cell\'s last graph natively (wgpu-py or cpu-python) and judge it against the protocol tolerance';

/** Why Compare is greyed after a run, on the button and (for session cells) under the cell. */
function explainCompare(cell, msg) {
  let why = '';
  if (!msg.comparable && msg.sessionRuns) {
    why = 'Compare with native is unavailable here: this cell ran a prepared session, whose ' +
      'tensors stay on the device between steps, so there is no single graph to send to the ' +
      'native executor. Run the graph once with g.run(...) (or run_async / submit) to compare it.';
  } else if (!msg.comparable) {
    why = 'Compare with native is unavailable: this cell ran no graph (g.run, run_async or submit).';
  }
  cell.compareButton.title = why || COMPARE_TITLE;
  if (msg.sessionRuns && !msg.comparable) {
    cell.compare.hidden = false;
    cell.compare.replaceChildren(el('p', { class: 'summary compare-unavailable', text: why }));
  }
}

async function compareCell(cell) {
  cell.compareButton.disabled = true;
  try {
    const { graph, result } = await request('last-graph', { cellId: cell.id });
    if (!graph) throw new Error('this cell has not run a graph yet');
    await showComparison(cell.compare, graph, result);
  } finally {
    cell.compareButton.disabled = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Worker messages and controls

function onWorkerMessage({ data: msg }) {
  switch (msg.type) {
    case 'progress': showProgress(msg); break;
    case 'ready':
      showProgress({ stage: 'total', label: `ready (Pyodide ${msg.pyodideVersion}, synchronous g.run: ${msg.canRunSync ? 'yes' : 'no — use await g.run_async'})`, state: 'done', ms: msg.ms });
      showBackend(msg.backend);
      state.ready = true;
      ui.runAll.disabled = false;
      document.body.dataset.ready = 'true';
      // The selector may have changed while loading: open what it says now.
      if (msg.backend.requested !== ui.backend.value || msg.allowSoftware !== ui.software.checked) {
        configureBackend();
      }
      pump();
      break;
    case 'backend': showBackend(msg.backend); break;
    case 'stream': {
      const cell = outputOf(msg.runId);
      if (cell) emit(cell, 'stream', msg.batch);
      break;
    }
    case 'output': onOutput(msg); break;
    case 'done': finishRun(msg); break;
    case 'anim-frame': case 'anim-state': case 'anim-input-ack': liveViews.message(msg); break;
    case 'anim-end': liveViews.message(msg); updateStop(); break;
    case 'last-graph': state.replies.get(msg.requestId)?.(msg); state.replies.delete(msg.requestId); break;
    case 'fatal':
      ui.backendStatus.textContent = `Worker error: ${msg.message}`;
      ui.backendStatus.classList.add('error');
      if (state.running) finishRun({ runId: state.running.runId, ok: false, ms: performance.now() - state.running.started, error: { type: 'Error', message: msg.message, traceback: '' } });
      break;
    default: break;
  }
}

/** Start (or restart) the worker: Pyodide, gpulab and the runtime load afresh. */
function startWorker() {
  state.ready = false;
  document.body.dataset.ready = 'false';
  ui.runAll.disabled = true;
  ui.progress.replaceChildren();
  ui.backendStatus.textContent = 'Loading…';
  ui.backendStatus.classList.remove('error');
  worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
  worker.onmessage = onWorkerMessage;
  worker.onerror = (event) => {
    ui.backendStatus.textContent = `Worker failed to start: ${event.message}`;
    ui.backendStatus.classList.add('error');
  };
  worker.postMessage({ type: 'init', backend: ui.backend.value, allowSoftware: ui.software.checked,
    controlBuffer: control?.buffer ?? null, jspi: params.get('jspi') !== 'off' });
}

/** The hard stop: end the worker (whatever it is doing, GPU wait included) and start anew. */
function restart() {
  for (const { cell } of state.queue) cell.prompt.textContent = '[ ]';
  state.queue = [];
  if (state.running) {
    const { cell, runId, started } = state.running;
    emitLine(cell, 'Python was restarted: this run was ended and its variables are gone.', 'error', 'alert');
    finishRun({ runId, ok: false, ms: performance.now() - started, error: { type: 'Restart', message: 'restarted' }, restarted: true });
  }
  state.replies.forEach((reply) => reply({ graph: null, result: null }));
  state.replies.clear();
  liveViews.workerGone();
  updateStop();
  worker.terminate();
  notebook.cells.forEach((cell) => { cell.compareButton.disabled = true; });
  startWorker();
}

ui.backend.addEventListener('change', configureBackend);
ui.software.addEventListener('change', configureBackend);
ui.stop.addEventListener('click', stop);
$('restart').addEventListener('click', restart);
ui.runAll.addEventListener('click', () => notebook.cells.forEach(enqueue));
$('add-cell').addEventListener('click', () => notebook.addCell().editor.focus());
if (!control) {
  ui.stopNote.hidden = false;
  ui.stopNote.textContent = 'Stop is unavailable: this page is not cross-origin isolated ' +
    '(no SharedArrayBuffer to interrupt Python). Serve it with `gpulab serve` (COOP/COEP ' +
    'headers). "Restart Python" still ends a run.';
}

// Start: the backend from the URL (?backend=webgpu&software=1) or the selector's defaults;
// ?jspi=off makes the worker act as a browser without JS promise integration.
if (params.get('backend')) ui.backend.value = params.get('backend');
if (params.get('software') === '1') ui.software.checked = true;
// The notebooks: this tab's one again after a reload (outputs included), else the newest.
await notebooks.start(EXAMPLES[0].cells.slice(0, 1));
startWorker();
