// Which backend runs a graph: the one opened when the runtime is created (the requested one,
// or for `auto` the first of BACKEND_ORDER that opens), and per graph, for `auto`, the first
// backend from there on that is available and whose supports(checked) finds every kernel.
// Every backend passed over is recorded with its reason; an explicit backend (and strict
// auto) is never downgraded: it refuses with UNAVAILABLE or UNSUPPORTED.
import { GpuLabError } from '../errors.mjs';
import { unsupportedError } from '../kernels.mjs';
import { BACKENDS, BACKEND_ORDER, openBackend } from './index.mjs';

/**
 * @typedef {{backend: string, ok: boolean, reason?: string, software?: boolean,
 *   code?: string}} Attempt
 * @typedef {{failNextRun?: boolean|string, registry?: Record<string, () => Promise<any>>,
 *   withoutKernels?: string[]|Record<string, string[]>, [hook: string]: unknown}} Hooks
 *   withoutKernels: ops (or op:dtype) every backend (an array) or the named backends (an
 *   object) answer as having no kernel for, so a test can see an UNSUPPORTED refusal and
 *   auto's fallback
 * @typedef {{backend?: 'auto'|'webgpu'|'webgl2'|'wasm'|'cpu', allowSoftware?: boolean, softwareHint?: string,
 *   strict?: boolean, hooks?: Hooks}} RuntimeOptions
 */

/**
 * An attempt's reason: the error's message without the "<backend>: " prefix openBackend puts on
 * it, since the attempt names its backend and every list prints "<backend>: <reason>" (else the
 * page showed "webgl2: webgl2: ...").
 * @param {string} name @param {unknown} err
 */
function attemptReason(name, err) {
  const text = err instanceof Error ? err.message : String(err);
  return text.startsWith(`${name}: `) ? text.slice(name.length + 2) : text;
}

/**
 * Open the requested backend, or the first of BACKEND_ORDER that opens for 'auto'.
 * @param {RuntimeOptions} options
 */
export async function chooseBackend({ backend = 'auto', allowSoftware = false, softwareHint, deadlineMs, strict = false, hooks = {} }) {
  const registry = hooks.registry ?? BACKENDS;
  const names = backend === 'auto' ? BACKEND_ORDER : [backend];
  /** @type {Attempt[]} */
  const attempts = [];
  for (const name of names) {
    try {
      const opened = await openBackend(name, { allowSoftware, softwareHint, deadlineMs, hooks }, registry);
      attempts.push({ backend: name, ok: true, software: Boolean(opened.info?.software) });
      return { opened, attempts };
    } catch (err) {
      attempts.push({ backend: name, ok: false, reason: attemptReason(name, err) });
      // An explicit backend is never downgraded; strict refuses any fallback.
      if (backend !== 'auto' || strict) throw unavailable(backend, attempts, err);
    }
  }
  throw unavailable(backend, attempts, null);
}

/** @param {string} requested @param {Attempt[]} attempts @param {unknown} cause */
function unavailable(requested, attempts, cause) {
  const list = attempts.map((a) => `${a.backend}: ${a.ok ? 'ok' : a.reason}`).join('; ');
  return new GpuLabError('UNAVAILABLE', `backend "${requested}" is not available (${list})`, null,
    { cause });
}

/**
 * The backends a runtime may run graphs on: the one chosen at creation, and for `auto` the
 * later ones of BACKEND_ORDER, opened the first time a graph needs them (a failed open is
 * remembered, not retried).
 */
export class BackendSet {
  /** @param {RuntimeOptions & {hooks: Hooks}} options @param {any} primary @param {Attempt[]} attempts */
  constructor(options, primary, attempts) {
    this.options = options;
    this.auto = (options.backend ?? 'auto') === 'auto';
    /** @type {Map<string, any>} name -> opened backend, or the Attempt that failed to open it */
    this.opened = new Map();
    for (const a of attempts) if (!a.ok) this.opened.set(a.backend, a);
    this.opened.set(primary.name, primary);
    this.primary = primary;
  }

  /** @param {string} name @returns {Promise<any>} a backend, or the failed Attempt */
  async open(name) {
    if (!this.opened.has(name)) {
      const { allowSoftware = false, softwareHint, deadlineMs, hooks } = this.options;
      try {
        this.opened.set(name, await openBackend(name, { allowSoftware, softwareHint, deadlineMs, hooks },
          hooks.registry ?? BACKENDS));
      } catch (err) {
        this.opened.set(name, { backend: name, ok: false, reason: attemptReason(name, err) });
      }
    }
    return this.opened.get(name);
  }

  /**
   * The backend to run `checked` on, with the per-graph attempts. An explicit backend (and
   * strict auto, whose first choice is the only one) refuses with UNSUPPORTED instead of
   * falling back.
   * @param {any} checked
   * @returns {Promise<{backend: any, attempts: Attempt[], fallback: string|null}>}
   */
  async choose(checked) {
    const names = this.auto && !this.options.strict
      ? BACKEND_ORDER.slice(BACKEND_ORDER.indexOf(this.primary.name)) : [this.primary.name];
    /** @type {Attempt[]} */
    const attempts = this.auto ? BACKEND_ORDER.slice(0, BACKEND_ORDER.indexOf(this.primary.name))
      .map((n) => this.opened.get(n)).filter(Boolean).map((a) => ({ ...a })) : [];
    /** @type {GpuLabError|null} */
    let refusal = null;
    /** @type {GpuLabError|null} */
    let last = null;
    for (const name of names) {
      const backend = await this.open(name);
      if (backend.ok === false) {
        attempts.push({ ...backend });
        continue;
      }
      const { ok, missing } = await supportOf(backend, checked, this.options.hooks);
      if (ok) {
        attempts.push({ backend: name, ok: true, software: Boolean(backend.info?.software) });
        return { backend, attempts, fallback: refusal && `${refusal.message}; ran on ${name}` };
      }
      last = unsupportedError(name, missing);
      refusal ??= last;
      attempts.push({ backend: name, ok: false, code: 'UNSUPPORTED',
        reason: `UNSUPPORTED: ${last.message}` });
    }
    // No backend ran it: the last refusal says why, with every other backend passed over.
    if (last) throw withPassedOver(last, attempts);
    throw unavailable(this.options.backend ?? 'auto', attempts, null);
  }

  dispose() {
    for (const b of this.opened.values()) if (b.ok !== false) b.dispose?.();
  }
}

/**
 * A backend's answer for one graph; a backend module without supports() is taken at its word
 * that it runs every graph (test doubles). hooks.withoutKernels hides kernels from it.
 * @param {any} backend @param {any} checked @param {Hooks} hooks
 * @returns {Promise<{ok: boolean, missing: import('./kernels.mjs').Missing[]}>}
 */
async function supportOf(backend, checked, hooks) {
  if (typeof backend.supports !== 'function') return { ok: true, missing: [] };
  const hidden = hooks.withoutKernels;
  const without = Array.isArray(hidden) ? hidden : (hidden?.[backend.name] ?? []);
  return backend.supports(checked, { without });
}

/** The last refusal of auto, listing the other backends passed over. */
function withPassedOver(/** @type {GpuLabError} */ error, /** @type {Attempt[]} */ attempts) {
  const others = attempts.filter((a) => a.reason !== `UNSUPPORTED: ${error.message}`);
  if (!others.length) return error;
  const list = others.map((a) => `${a.backend}: ${a.reason}`).join('; ');
  return new GpuLabError('UNSUPPORTED', `${error.message} (passed over: ${list})`, error.node);
}
