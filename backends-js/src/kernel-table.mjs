// The kernel table (kernels/ops.json): how the map1, map2 and reduce families compute each op.
// The planners read their OP codes here (the Python twin, gpulab/kernel_table.py, reads the
// same file through the package's link), the webgl2 and wasm backends their op lists: no hand-kept
// list of op names.
import { kernelFile } from './kernel-files.mjs';
import { opSpec } from './optable.mjs';

// A dynamic import: the file's place depends on the layout (tree or installed package).
const table = (await import(kernelFile('ops.json').href, { with: { type: 'json' } })).default;

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

/**
 * map1 ops the planners may fold into a map2 dispatch (kernel table `fuse`: selection or sign
 * only, so fusing changes no bit), op -> its OP code (twin of kernel_table.py).
 * @returns {Record<string, number>}
 */
export function fusableMap1() {
  return Object.fromEntries(familyOps('map1').filter((op) => table.ops[op].fuse)
    .map((op) => [op, table.ops[op].code]));
}

/**
 * map2 ops a matmul kernel may apply to its finished sum (kernel table `epilogue`: the planners
 * fold such a node reading a matmul into its dispatch), op -> its OP code (twin of
 * kernel_table.py epilogue_map2).
 * @returns {Record<string, number>}
 */
export function epilogueMap2() {
  return Object.fromEntries(familyOps('map2').filter((op) => table.ops[op].epilogue)
    .map((op) => [op, table.ops[op].code]));
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

/**
 * An op's text in one language at one dtype (a string for every dtype, or {dtype: text}); null
 * where that language has no kernel at that dtype. For a reduction, its `combine` text.
 * @param {string} op @param {string} lang 'wgsl' | 'glsl' | 'rust' | 'js' | 'np'
 * @param {string} [dtype] @returns {string|null}
 */
export function exprOf(op, lang, dtype = 'float32') {
  const row = table.ops[op];
  const value = row.family === 'reduce' ? row.combine[lang] : row[lang]; // a reduction: its combiner
  if (value !== null && typeof value === 'object') return value[dtype] ?? null;
  return value ?? null;
}

/**
 * The dtypes at which one language computes an op: the op table's dtypes of its first operand
 * that have kernels (dtype_suffix) and a non-null text in that language.
 * @param {string} op @param {string} lang @returns {string[]}
 */
export function langDtypes(op, lang) {
  const spec = opSpec(op);
  if (!spec) return [];
  const types = spec.types?.[spec.operand_types?.[spec.operands[0]]] ?? ['float32'];
  return types.filter((d) => d in table.dtype_suffix && exprOf(op, lang, d) !== null);
}

/** The export / kernel name suffix of a dtype ('' for float32, '_i32'). @param {string} dtype */
export function dtypeSuffix(dtype = 'float32') {
  return table.dtype_suffix[dtype] ?? '';
}
