// Browser lane of the conformance runner. Exposes window.gpulabConformance.run(backend,
// allowSoftware, cases, withoutKernels?), which imports the runtime the same way an embedding page would and
// answers like node_executor.mjs (see run_cases.mjs).
import { runCases } from './run_cases.mjs';

/** withoutKernels: a test hook, ops the backend answers as having no kernel for. */
async function run(backend, allowSoftware, cases, withoutKernels = []) {
  let createRuntime;
  try {
    ({ createRuntime } = await import('/backends-js/src/runtime.mjs'));
  } catch (err) {
    const reason = `/backends-js/src/runtime.mjs cannot be imported: ${err.message}`;
    return { lane: { available: false, reason }, results: [] };
  }
  return runCases(createRuntime, { backend, allowSoftware, withoutKernels }, cases);
}

window.gpulabConformance = { run };
