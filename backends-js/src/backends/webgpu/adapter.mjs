// Adapter policy for the browser WebGPU backend: find an adapter, describe it, and refuse
// software renderers unless the caller explicitly allows them (results would otherwise claim
// "GPU" while running on the CPU).

import { GpuLabError } from '../../errors.mjs';
import { softwareHint } from '../software-hint.mjs';

/** Software renderers recognised by name: [lower-case needle, display name]. */
const SOFTWARE_NAMES = [
  ['swiftshader', 'SwiftShader'],
  ['llvmpipe', 'llvmpipe'],
  ['lavapipe', 'lavapipe'],
  ['softpipe', 'softpipe'],
  ['microsoft basic render', 'Microsoft Basic Render'],
];

/**
 * @typedef {{vendor: string, architecture: string, description: string, device: string,
 *   fallback: boolean}} AdapterFacts
 */

/**
 * Read what the adapter says about itself. Current Chromium has `adapter.info` (with
 * `isFallbackAdapter`); older builds had `adapter.isFallbackAdapter` and `requestAdapterInfo()`.
 * @param {GPUAdapter} adapter
 * @returns {Promise<AdapterFacts>}
 */
export async function adapterFacts(adapter) {
  let info = adapter.info;
  if (!info && typeof adapter.requestAdapterInfo === 'function') {
    info = await adapter.requestAdapterInfo();
  }
  info = info || {};
  const fallback = Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false);
  return {
    vendor: String(info.vendor || ''),
    architecture: String(info.architecture || ''),
    description: String(info.description || ''),
    device: String(info.device || ''),
    fallback,
  };
}

/**
 * The name of the software renderer behind an adapter, or null for a hardware adapter.
 * @param {AdapterFacts} facts
 * @returns {string | null}
 */
export function softwareName(facts) {
  const text = [facts.vendor, facts.architecture, facts.description, facts.device]
    .join(' ')
    .toLowerCase();
  for (const [needle, display] of SOFTWARE_NAMES) {
    if (text.includes(needle)) return display;
  }
  return facts.fallback ? 'fallback adapter' : null;
}

/**
 * "SwiftShader (google, swiftshader)": the renderer and the adapter's own words for it.
 * @param {AdapterFacts} facts
 * @param {string} label
 */
export function describeAdapter(facts, label) {
  const words = [facts.vendor, facts.architecture, facts.device, facts.description].filter(Boolean);
  const unique = [...new Set(words)];
  return unique.length ? `${label} (${unique.join(', ')})` : label;
}

/**
 * Find an adapter that the policy accepts.
 * @param {{allowSoftware?: boolean, gpu?: GPU}} opts
 * @returns {Promise<{adapter: GPUAdapter, facts: AdapterFacts, software: boolean}>}
 */
export async function acquireAdapter(opts = {}) {
  const { allowSoftware = false, gpu = globalThis.navigator?.gpu } = opts;
  if (!gpu) {
    throw new GpuLabError('UNAVAILABLE', 'WebGPU API not present (navigator.gpu is missing)');
  }
  let adapter = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (err) {
    throw new GpuLabError('UNAVAILABLE', `WebGPU requestAdapter failed: ${errorText(err)}`);
  }
  if (!adapter) {
    throw new GpuLabError('UNAVAILABLE', 'WebGPU has no adapter (requestAdapter returned null)');
  }
  const facts = await adapterFacts(adapter);
  const soft = softwareName(facts);
  if (soft && !allowSoftware) {
    throw new GpuLabError(
      'UNAVAILABLE',
      `refused software adapter: ${describeAdapter(facts, soft)} — ${softwareHint(opts)}`,
    );
  }
  return { adapter, facts, software: soft !== null };
}

/** @param {unknown} err */
export function errorText(err) {
  if (err && typeof err === 'object' && 'message' in err) return String(err.message);
  return String(err);
}
