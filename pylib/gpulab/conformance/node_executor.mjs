#!/usr/bin/env node
// Node lane of the conformance runner: reads [{name, graph}] as JSON on stdin, runs each case
// with createRuntime({backend}) from backends-js, writes run_cases.mjs's JSON answer on stdout.
//   node pylib/gpulab/conformance/node_executor.mjs cpu|wasm [--runtime=URL] [--allow-software]
//     [--without-kernels=op,op] [--break-ops=op,op] < cases.json
// --runtime: the file: URL of the runtime.mjs to run (the checkout's, the wheel's or an
// installed gpu-lab package's; default the checkout's, ../../backends-js/src/runtime.mjs).
// --without-kernels is a test hook: the backend answers as if it had no kernel for those ops;
// --break-ops another: the outputs of those ops come back with wrong bits (run_cases.mjs).
import { runCases } from './run_cases.mjs';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function main() {
  const [backend, ...flags] = process.argv.slice(2);
  if (!backend) {
    throw new Error('usage: node_executor.mjs <backend> [--allow-software] ' +
      '[--without-kernels=op,...] < cases');
  }
  const cases = JSON.parse(await readStdin());
  const listFlag = (/** @type {string} */ name) => {
    const flag = flags.find((f) => f.startsWith(`--${name}=`));
    return flag ? flag.slice(name.length + 3).split(',').filter(Boolean) : [];
  };
  const [runtimeUrl] = listFlag('runtime');
  const entry = runtimeUrl ?? new URL('../../../backends-js/src/runtime.mjs', import.meta.url).href;
  let createRuntime;
  try {
    ({ createRuntime } = await import(entry));
  } catch (err) {
    const reason = `${entry} cannot be imported: ${err.message}`;
    process.stdout.write(JSON.stringify({ lane: { available: false, reason }, results: [] }));
    return;
  }
  const answer = await runCases(createRuntime, { backend,
    allowSoftware: flags.includes('--allow-software'), withoutKernels: listFlag('without-kernels'),
    breakOps: listFlag('break-ops') }, cases);
  // exit once written: a GPU library (Dawn under node-webgpu) may keep the event loop alive
  process.stdout.write(JSON.stringify(answer), () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(2);
});
