// Which nodes a program does not record on their own, decided once per prepared graph from the
// kernels' registry options (registry.mjs): transposes that their consumers read from the
// source (readsTransposed), and operand nodes a kernel computes in its own passes (absorbs).
// Nodes readable from outside (outputs, fed, carried, resident: `pinned`) keep their values.
import { kernelFor } from './registry.mjs';

/**
 * @typedef {{order: number[], nodes: Map<number, any>, pinned: Set<number>, options?: any}} GraphView
 *   the live nodes in execution order, every node by id, the nodes readable from outside, and
 *   the backend's kernel options (registry.mjs KernelContext.options)
 */

/** node id -> the live nodes that read it (each once). @param {GraphView} g */
function consumersOf(g) {
  /** @type {Map<number, number[]>} */
  const consumers = new Map();
  for (const id of g.order) {
    for (const op of new Set(g.nodes.get(id).operands)) {
      consumers.set(op, [...(consumers.get(op) ?? []), id]);
    }
  }
  return consumers;
}

/**
 * Transposes that are never computed: not pinned, and every consumer reads them from their
 * source. transpose id -> source id.
 * @param {GraphView} g
 */
export function foldedTransposes(g) {
  const consumers = consumersOf(g);
  const folded = new Map();
  for (const id of g.order) {
    const node = g.nodes.get(id);
    const users = consumers.get(id) ?? [];
    if (node.op !== 'transpose' || g.pinned.has(id) || users.length === 0) continue;
    if (users.every((u) => kernelFor(g.nodes.get(u).op)?.readsTransposed)) {
      folded.set(id, node.operands[0]);
    }
  }
  return folded;
}

/**
 * Nodes another node's kernel computes in its own passes: the kernel offers sets of operand
 * nodes, preferred first; a set is taken when each node in it is computed (neither input nor
 * constant nor a folded transpose), not taken already, and read only by the absorbing node or
 * other nodes of the set. absorbed id -> the absorbing node's id.
 * @param {GraphView} g @param {Map<number, number>} folded
 */
export function absorbedNodes(g, folded) {
  const consumers = consumersOf(g);
  const absorbed = new Map();
  const view = { nodeOf: (n) => g.nodes.get(n), pinned: (n) => g.pinned.has(n), options: g.options ?? {} };
  for (const id of g.order) {
    const absorbs = kernelFor(g.nodes.get(id).op)?.absorbs;
    for (const ids of absorbs ? absorbs(g.nodes.get(id), view) : []) {
      const set = new Set([id, ...ids]);
      const fits = (a) => g.nodes.get(a).op !== 'input' && !folded.has(a) && !absorbed.has(a) &&
        !kernelFor(g.nodes.get(a).op)?.constant && (consumers.get(a) ?? []).every((c) => set.has(c));
      if (ids.length && ids.every(fits)) {
        ids.forEach((a) => absorbed.set(a, id));
        break;
      }
    }
  }
  return absorbed;
}
