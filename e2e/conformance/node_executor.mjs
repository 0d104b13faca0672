#!/usr/bin/env node
// Node lane of the conformance runner: reads [{name, graph}] as JSON on stdin, runs each case
// with createRuntime({backend}) from backends-js, writes run_cases.mjs's JSON answer on stdout.
//   node e2e/conformance/node_executor.mjs cpu|wasm [--allow-software]
//     [--without-kernels=op,op] < cases.json
// --without-kernels is a test hook: the backend answers as if it had no kernel for those ops.
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
  let createRuntime;
  try {
    ({ createRuntime } = await import('../../backends-js/src/runtime.mjs'));
  } catch (err) {
    const reason = `backends-js/src/runtime.mjs cannot be imported: ${err.message}`;
    process.stdout.write(JSON.stringify({ lane: { available: false, reason }, results: [] }));
    return;
  }
  const without = flags.find((f) => f.startsWith('--without-kernels='));
  const withoutKernels = without ? without.slice('--without-kernels='.length).split(',') : [];
  const answer = await runCases(createRuntime,
    { backend, allowSoftware: flags.includes('--allow-software'), withoutKernels }, cases);
  // exit once written: a GPU library (Dawn under node-webgpu) may keep the event loop alive
  process.stdout.write(JSON.stringify(answer), () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(2);
});
