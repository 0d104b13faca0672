// Which tensors a program stores packed: RGBA32F, 4 consecutive elements of a row per texel,
// one matrix row per texture row (width = last axis / 4). That is the layout matmul packs its
// operands into (pack.glsl) and that a 4-wide Adam pass reads and writes, so a parameter kept
// packed between steps is never packed again and its update shades a quarter of the fragments
// (docs/webgl2.md, "Packed tensors"). Upload and read-back of a packed tensor are its
// row-major data as is (readPixels / texSubImage2D of RGBA FLOAT), so nothing outside the
// program sees the layout.
//
// A node is packed when its writer writes packed (an input's upload, or a kernel's `packs.writes`
// group, all packed together), its shape fits, and every reader accepts it (`packs.reads` of
// the consumer, or of the node that absorbed the consumer); a carried input and the output
// carried into it are packed together (their textures swap between steps), else neither is.
import { kernelFor, sizeOf } from './registry.mjs';

/**
 * @typedef {{nodeOf: (id: number) => any, absorber: (id: number) => number|undefined,
 *   maxTextureSize: number, options: {flatMatmul: boolean, blockRows: number, packing?: boolean}}} PackView
 * @typedef {{reads: (node: any, opId: number, view: PackView) => boolean,
 *   writes: (node: any, view: PackView) => number[]|null}} Packs
 */

/**
 * Whether a node's tensor can be packed: float32, last axis a multiple of 4, within the
 * texture limit (width last / 4, height the rows).
 * @param {any} node @param {number} max
 */
export function packable(node, max) {
  if ((node.dtype ?? 'float32') !== 'float32' || !node.shape?.length) return false;
  const cols = node.shape[node.shape.length - 1];
  const rows = sizeOf(node.shape) / Math.max(cols, 1);
  return cols > 0 && cols % 4 === 0 && cols / 4 <= max && rows >= 2 && rows <= max;
}

/**
 * The packed nodes of a program.
 * @param {{order: number[], nodes: Map<number, any>}} g live nodes, in order
 * @param {Map<number, number>} absorbed absorbed id -> absorber (fusion.mjs)
 * @param {Map<number, number>} folded folded transpose id -> source
 * @param {Map<number, number>} carry input id -> output id
 * @param {Set<number>} keep nodes read as textures from outside (presenters): never packed
 * @param {Omit<PackView, 'nodeOf'|'absorber'>} limits
 * @returns {Set<number>}
 */
export function packedNodes(g, absorbed, folded, carry, keep, limits) {
  if (limits.options?.packing === false) return new Set();
  const view = { ...limits, nodeOf: (id) => g.nodes.get(id), absorber: (id) => absorbed.get(id) };
  /** @type {Map<number, number[]>} node -> the group packed with it */
  const groups = new Map();
  for (const id of g.order) {
    const node = g.nodes.get(id);
    if (absorbed.has(id) || folded.has(id)) continue;
    const ids = node.op === 'input' ? [id] : kernelFor(node.op)?.packs?.writes(node, view);
    if (ids?.length && ids.every((i) => packable(g.nodes.get(i), limits.maxTextureSize))) {
      ids.forEach((i) => groups.set(i, ids));
    }
  }
  /** @type {Map<number, number[]>} node -> readers (absorbed readers as their absorber) */
  const readers = new Map();
  for (const id of g.order) {
    for (const op of new Set(g.nodes.get(id).operands)) {
      readers.set(op, [...(readers.get(op) ?? []), id]);
    }
  }
  const outputsCarried = new Map();
  for (const out of carry.values()) outputsCarried.set(out, (outputsCarried.get(out) ?? 0) + 1);
  const packed = new Set(groups.keys());
  /** Whether node r reads operand id packed: its own kernel says (a folded transpose: every
   * consumer of it), or, for a node without packs, the kernel that absorbed it. */
  const readsPacked = (r, id) => {
    const node = g.nodes.get(r);
    if (folded.has(r)) return (readers.get(r) ?? []).every((c) => readsPacked(c, r));
    const own = kernelFor(node.op)?.packs;
    if (own) return own.reads(node, id, view);
    const at = absorbed.get(r);
    return at !== undefined && Boolean(kernelFor(g.nodes.get(at).op)?.packs?.reads(g.nodes.get(at), id, view));
  };
  const accepts = (id) => (readers.get(id) ?? []).every((r) => readsPacked(r, id));
  const carryFits = (id) => {
    if (keep.has(id) && !outputsCarried.has(id)) return false;
    if ((outputsCarried.get(id) ?? 0) > 1) return false;
    if (outputsCarried.has(id) && g.nodes.get(id).op === 'input') return false;  // copied, not swapped
    for (const [input, output] of carry) {
      if ((input === id || output === id) && packed.has(input) !== packed.has(output)) return false;
    }
    return true;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const id of [...packed]) {
      if (!packed.has(id) || (accepts(id) && carryFits(id))) continue;
      groups.get(id).forEach((i) => packed.delete(i));
      changed = true;
    }
  }
  return packed;
}
