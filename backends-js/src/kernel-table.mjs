// The kernel table (kernels/ops.json): how the map1, map2 and reduce families compute each op.
// The planners read their OP codes here (the Python twin, gpulab/kernel_table.py, reads the
// package copy), the webgl2 and wasm backends their op lists: no hand-kept list of op names.
import table from '../../kernels/ops.json' with { type: 'json' };

export { table as kernelTable };

/**
 * The ops of a family, by OP code.
 * @param {string} family 'map1' | 'map2' | 'reduce'
 * @returns {string[]}
 */
export function familyOps(family) {
  return Object.entries(table.ops)
    .filter(([, row]) => row.family === family)
    .sort((x, y) => x[1].code - y[1].code)
    .map(([op]) => op);
}

/** op -> its OP code, for one family. @param {string} family @returns {Record<string, number>} */
export function familyCodes(family) {
  return Object.fromEntries(familyOps(family).map((op) => [op, table.ops[op].code]));
}

/**
 * op -> the float attribute it reads as its scalar, for the ops of a family that have one.
 * @param {string} family @returns {Record<string, string>}
 */
export function scalarAttrs(family) {
  return Object.fromEntries(familyOps(family).filter((op) => table.ops[op].scalar)
    .map((op) => [op, table.ops[op].scalar]));
}

/**
 * The WGSL kernel of a family at a dtype: 'unary', 'unary_i32', ... (kernels/wgsl/<name>.wgsl).
 * @param {string} family @param {string} [dtype]
 */
export function familyKernel(family, dtype = 'float32') {
  const suffix = table.dtype_suffix[dtype];
  if (suffix === undefined) throw new Error(`kernels/ops.json: no kernels at ${dtype}`);
  return table.families[family].wgsl + suffix;
}
