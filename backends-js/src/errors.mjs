// The one error type of the runtime. Every refusal carries a code from the op table's
// `error_codes` and, when a node is at fault, that node's id, so callers can point at it.

/** @typedef {'VALIDATION'|'UNSUPPORTED_VERSION'|'UNSUPPORTED'|'LIMIT'|'UNAVAILABLE'|'BACKEND'|'STATE'|'DISPOSED'|'PERMISSION'} ErrorCode */

export class GpuLabError extends Error {
  /**
   * @param {ErrorCode} code
   * @param {string} message
   * @param {number|null} [node] id of the node at fault, or null
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, node = null, options = undefined) {
    super(message, options);
    this.name = 'GpuLabError';
    /** @type {ErrorCode} */
    this.code = code;
    /** @type {number|null} */
    this.node = node;
  }

  /** Plain data, for posting across a worker boundary or printing as JSON. */
  toJSON() {
    return { name: this.name, code: this.code, message: this.message, node: this.node };
  }
}

/**
 * How every message names a node: `node <id> (<op>)`.
 * @param {number} id
 * @param {string} op
 */
export function nodeLabel(id, op) {
  return `node ${id} (${op})`;
}

/**
 * An error about one node, its message starting with the node's label.
 * @param {ErrorCode} code
 * @param {{id: number, op: string}} node
 * @param {string} detail
 */
export function nodeError(code, node, detail) {
  return new GpuLabError(code, `${nodeLabel(node.id, node.op)}: ${detail}`, node.id);
}

/**
 * Wrap anything thrown by backend work as BACKEND (the one wrapper: the runtime, sessions and
 * the backends' device code all use it).
 * @param {unknown} err
 * @param {string} context what was being done, e.g. "run"
 * @param {{keepAll?: boolean, who?: string}} [options] keepAll: a GpuLabError of any code
 *   passes unchanged (the code that threw knew what went wrong), else only a BACKEND one does
 *   (a session poisons itself with BACKEND whatever failed); who: names the failing part in the
 *   message ("WebGPU failed during ...")
 */
export function asBackendError(err, context, { keepAll = false, who = 'backend' } = {}) {
  if (err instanceof GpuLabError && (keepAll || err.code === 'BACKEND')) return err;
  const why = err instanceof Error ? `${err.name}: ${err.message}`
    : err && typeof err === 'object' && 'message' in err ? String(err.message) : String(err);
  return new GpuLabError('BACKEND', `${who} failed during ${context}: ${why}`, null, { cause: err });
}

/** @param {unknown} err */
export function isGpuLabError(err) {
  return err instanceof GpuLabError;
}
