// The Stop protocol between the page and the worker, on one SharedArrayBuffer.
//
// Why a protocol and not just "write SIGINT": Pyodide turns the interrupt buffer into a
// KeyboardInterrupt in whatever Python code runs next. While a cell waits on a GPU request
// (run_sync or await), the next Python code to run is Pyodide's own glue (the resolver that
// hands the JS result to a Python future, asyncio's call_soon). An interrupt raised there is lost
// together with the result: the cell waits forever on a future nobody will complete. So Stop
// sends SIGINT only while Python runs the cell's own code; during a bridge wait it only raises
// the cancel flag, and the bridge raises KeyboardInterrupt itself when the wait ends.
//
// Slots (Int32):
//   INTERRUPT  Pyodide's interrupt buffer (setInterruptBuffer): 2 = SIGINT
//   CANCEL     1 = refuse further GPU requests and the rest of a chunked session run
//   PHASE      PYTHON (cell code may run) / WAITING (Python waits on a bridge request) /
//              SIGINT (the page committed to SIGINT) / STOPPED_WAITING (Stop came during a wait)
//              / STOPPED (the bridge raised for it)
//   SIGNALLED  1 once the page has written SIGINT (the write follows the PHASE change)

export const SLOT = Object.freeze({ INTERRUPT: 0, CANCEL: 1, PHASE: 2, SIGNALLED: 3 });
export const PHASE = Object.freeze({
  PYTHON: 0, WAITING: 1, SIGINT: 2, STOPPED_WAITING: 3, STOPPED: 4,
});
const SIGINT = 2;

/** A control array for the page and the worker, or null without cross-origin isolation. */
export function createControl() {
  if (!globalThis.crossOriginIsolated) return null;
  return new Int32Array(new SharedArrayBuffer(4 * Object.keys(SLOT).length));
}

/** Before each run: nothing stopped, Python about to run the cell's code. */
export function resetControl(control) {
  for (const slot of Object.values(SLOT)) Atomics.store(control, slot, 0);
}

/** True once Stop was pressed for this run. */
export function cancelRequested(control) {
  return Boolean(control) && Atomics.load(control, SLOT.CANCEL) === 1;
}

/**
 * Stop (the page's button; the worker's test hook): the cancel flag, then SIGINT only if Python
 * is running cell code. The phase changes by compare-and-swap, so a wait that starts or ends
 * at the same moment is always seen by exactly one side.
 */
export function requestStop(control) {
  Atomics.store(control, SLOT.CANCEL, 1);
  signal(control);
  Atomics.notify(control, SLOT.CANCEL); // wakes a cell's time.sleep (worker.mjs)
}

function signal(control) {
  for (;;) {
    const phase = Atomics.load(control, SLOT.PHASE);
    if (phase === PHASE.PYTHON) {
      if (Atomics.compareExchange(control, SLOT.PHASE, PHASE.PYTHON, PHASE.SIGINT) === PHASE.PYTHON) {
        Atomics.store(control, SLOT.INTERRUPT, SIGINT);
        Atomics.store(control, SLOT.SIGNALLED, 1);
        return;
      }
    } else if (phase === PHASE.WAITING) {
      if (Atomics.compareExchange(control, SLOT.PHASE, PHASE.WAITING, PHASE.STOPPED_WAITING) ===
        PHASE.WAITING) return;
    } else {
      return; // already stopping
    }
  }
}

/**
 * The worker's side, handed to the Python adapter as its wait gate: the bridge calls enter()
 * before it blocks on (or awaits) a request and leave() once it is back in its own code.
 * Answers: 'ok'; 'sigint' (the page's SIGINT is on its way: let it land in the cell's code);
 * 'stopped' (Stop came while waiting, or earlier: raise KeyboardInterrupt).
 * @param {Int32Array|null} control
 */
export function createWaitGate(control) {
  let depth = 0; // nested waits (asyncio.gather of several awaited runs)
  return {
    enter() {
      if (!control) return 'ok';
      if (depth > 0) { depth += 1; return 'ok'; }
      const phase = Atomics.compareExchange(control, SLOT.PHASE, PHASE.PYTHON, PHASE.WAITING);
      if (phase === PHASE.PYTHON) { depth = 1; return 'ok'; }
      return phase === PHASE.SIGINT ? 'sigint' : 'stopped';
    },
    leave() {
      if (!control || depth === 0) return 'ok';
      depth -= 1;
      if (depth > 0) return 'ok';
      const phase = Atomics.compareExchange(control, SLOT.PHASE, PHASE.WAITING, PHASE.PYTHON);
      if (phase === PHASE.WAITING) return 'ok';
      Atomics.store(control, SLOT.PHASE, PHASE.STOPPED);
      return 'stopped';
    },
    /** A new run starts with no wait open (a stuck one was abandoned). */
    reset() { depth = 0; },
  };
}

/**
 * True while a SIGINT the page committed to may still reach Python: written but not yet taken
 * by Pyodide, or about to be written.
 */
export function interruptInFlight(control) {
  if (!control) return false;
  if (Atomics.load(control, SLOT.INTERRUPT) !== 0) return true;
  return Atomics.load(control, SLOT.PHASE) === PHASE.SIGINT &&
    Atomics.load(control, SLOT.SIGNALLED) === 0;
}

/** Drop a SIGINT nobody took (so it cannot land in Pyodide's glue after the run). */
export function clearInterrupt(control) {
  if (control) Atomics.store(control, SLOT.INTERRUPT, 0);
}
