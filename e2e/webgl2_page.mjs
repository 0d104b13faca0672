// Main-thread side of the WebGL2 tests: runs harness scenarios here or in a module worker.
import * as harness from './webgl2_harness.mjs';

/** @type {Worker|null} */
let worker = null;
let nextId = 0;
/** @type {Map<number, {resolve: Function, reject: Function}>} */
const pending = new Map();

function startWorker() {
  worker = new Worker(new URL('./webgl2_worker.mjs', import.meta.url), { type: 'module' });
  worker.onmessage = ({ data }) => {
    const p = pending.get(data.id);
    pending.delete(data.id);
    if (data.error) p?.reject(Object.assign(new Error(data.error.message), data.error));
    else p?.resolve(data.result);
  };
  worker.onerror = (ev) => {
    // A worker that fails to load (bad import) must fail the test, not leave it waiting.
    for (const p of pending.values()) p.reject(new Error(`worker error: ${ev.message}`));
    pending.clear();
  };
  return worker;
}

/** @param {string} name @param {object} args */
function callInWorker(name, args = {}) {
  const w = worker ?? startWorker();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.postMessage({ id, name, args });
  });
}

/** @param {string} name @param {object} args */
async function call(name, args = {}) {
  return { ...(await harness[name](args)), scope: globalThis.constructor.name };
}

window.webgl2Test = { call, callInWorker };
