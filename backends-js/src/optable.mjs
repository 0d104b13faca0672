// The op table (ops.json) is the single source of truth for ops, operands, attributes, limits
// and tolerance classes; this module only loads it and answers small questions about it.
import table from './ops.json' with { type: 'json' };

export { table };

/** @typedef {{type: string, required: boolean, default?: unknown}} AttrSpec */
/** @typedef {{since: number, family: string, operands: string[], types?: Record<string, string[]>,
 *   operand_types: Record<string, string>, result_type: string, attrs: Record<string, AttrSpec>,
 *   shape_rule: string, features?: Record<string, number>, tolerance: string, doc: string}} OpSpec */

export const LIMITS = Object.freeze({ ...table.limits });
export const PROTOCOL_VERSIONS = Object.freeze([...table.protocol_versions]);
export const REDUCE_LANES = table.reduce_lanes;
export const ERROR_CODES = Object.freeze(Object.keys(table.error_codes));
/** Features of any node's tensors that need a later version (docs/protocol.md step 6). */
export const TENSOR_FEATURES = Object.freeze({ ...table.tensor_features });

/** @param {string} op @returns {OpSpec|undefined} */
export function opSpec(op) {
  return Object.hasOwn(table.ops, op) ? table.ops[op] : undefined;
}

/** @returns {string[]} every op name, in table order */
export function opNames() {
  return Object.keys(table.ops);
}

/** @param {string} op @returns {string} */
export function toleranceOf(op) {
  return table.ops[op].tolerance;
}

/**
 * The operand names of a checked node, one per entry of its `operands`: a variadic row's
 * list field first (`variadic`: the field's name, e.g. concat's `tensors`: `tensors[0]`,
 * `tensors[1]`, ...; docs/protocol.md "Variadic operands"), then the row's `operands`.
 * @param {OpSpec} spec @param {number} count the node's operand count
 * @returns {string[]}
 */
export function operandNames(spec, count) {
  if (!spec.variadic) return spec.operands;
  const listed = count - spec.operands.length;
  return [...Array.from({ length: listed }, (_, i) => `${spec.variadic}[${i}]`), ...spec.operands];
}

/** The op-table name of an operand name (`tensors[2]` -> `tensors`). @param {string} name */
export function operandField(name) {
  const bracket = name.indexOf('[');
  return bracket < 0 ? name : name.slice(0, bracket);
}
