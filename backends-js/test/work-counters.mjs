// Counters of the work a runtime does, for tests that must tell "refused before any work" and
// "stopped between steps" apart from their failures without a clock: how many programs the
// backends prepared, and how many turns a run gave the event loop.
import { BACKENDS } from '../src/backends/index.mjs';

/**
 * A backend registry (hooks.registry) whose backends count the programs they prepare: work a
 * refusal must come before.
 */
export function countingRegistry() {
  const prepared = { count: 0 };
  const registry = Object.fromEntries(Object.entries(BACKENDS).map(([name, load]) => [name, async () => {
    const mod = await load();
    return { ...mod, async createBackend(options) {
      const backend = await mod.createBackend(options);
      const prepare = backend.prepare.bind(backend);
      backend.prepare = (...args) => { prepared.count += 1; return prepare(...args); };
      return backend;
    } };
  }]));
  return { registry, prepared };
}

/**
 * Runs `onFirst` at the first turn a run gives the event loop (step-gate.mjs yields with
 * setImmediate in node), ahead of the run's own resumption, as a dispose() message that arrived
 * meanwhile would; counts every turn. restore() puts setImmediate back.
 * @param {() => void} onFirst
 */
export function atFirstYield(onFirst) {
  const real = globalThis.setImmediate;
  const seen = { yields: 0 };
  globalThis.setImmediate = /** @type {any} */ ((fn, ...args) => {
    seen.yields += 1;
    if (seen.yields === 1) real(onFirst);
    return real(fn, ...args);
  });
  return { seen, restore: () => { globalThis.setImmediate = real; } };
}
