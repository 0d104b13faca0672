// Dtypes (docs/protocol.md "Dtypes"): the op table's `dtypes` rows, the typed array that holds
// each one, data in any accepted form turned into that typed array, base64 both ways, and the
// generic result-dtype rule (the op table's `types` / `operand_types` / `result_type`).
// Its Python twin is pylib/gpulab/dtypes.py; the messages are the same word for word.
import { nodeError } from './errors.mjs';
import { table, operandNames, operandField } from './optable.mjs';

/** @typedef {'float32'|'int32'|'uint32'|'bool'|'q4_k'|'q6_k'|'q8_0'|'q4_0'} Dtype */
/** @typedef {Float32Array|Int32Array|Uint32Array|Uint8Array} TypedData */

/** @type {Record<string, {bytes: number, since: number, doc: string}>} */
export const DTYPES = table.dtypes;
export const DTYPE_NAMES = Object.freeze(Object.keys(DTYPES));
/** The block-quantized dtypes (rows with a `block`): their data are bytes. */
export const BLOCK_DTYPES = Object.freeze(DTYPE_NAMES.filter((name) => DTYPES[name].block));

/** The typed array of each dtype: bool is one byte per element (0 or 1). */
export const TYPED_ARRAY = Object.freeze({
  float32: Float32Array, int32: Int32Array, uint32: Uint32Array, bool: Uint8Array,
  ...Object.fromEntries(BLOCK_DTYPES.map((name) => [name, Uint8Array])),
});

/**
 * Block-quantized dtypes (the op table's rows with `block`): their data are the blocks' bytes,
 * `block.bytes` per `block.elements` values of the logical float shape [N, K].
 * @param {string} dtype @returns {{elements: number, bytes: number}|undefined}
 */
export const blockOf = (dtype) => DTYPES[dtype]?.block;

/**
 * How many stored units (typed-array elements) hold `count` values of `dtype`: the count, or
 * for a block dtype its byte length.
 * @param {string} dtype @param {number} count
 */
export function storedLength(dtype, count) {
  const block = blockOf(dtype);
  return block ? (count / block.elements) * block.bytes : count;
}

/**
 * A block dtype needs a rank-2 shape [N, K] with K a multiple of its block (256); null when the
 * shape fits (or the dtype has no blocks), else what is wrong.
 * @param {string} dtype @param {number[]} shape @returns {string|null}
 */
export function blockShapeProblem(dtype, shape) {
  const block = blockOf(dtype);
  if (!block || (shape.length === 2 && shape[1] % block.elements === 0)) return null;
  return `a ${dtype} tensor has shape [N, K] with K a multiple of ${block.elements}, ` +
    `got [${shape.join(', ')}]`;
}

/** Integer ranges (inclusive) of the integer-like dtypes, and what a message calls them. */
const RANGES = {
  int32: [-2147483648, 2147483647, 'an integer in -2147483648..2147483647'],
  uint32: [0, 4294967295, 'an integer in 0..4294967295'],
  bool: [0, 1, '0, 1, true or false'],
  ...Object.fromEntries(BLOCK_DTYPES.map((name) => [name, [0, 255, 'a byte in 0..255']])),
};

const NON_FINITE = new Map([['nan', NaN], ['inf', Infinity], ['-inf', -Infinity]]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** @param {string} name */
export const isDtype = (name) => Object.hasOwn(DTYPES, name);

/** @param {string} dtype @param {number} count @returns {TypedData} */
export function allocTyped(dtype, count) {
  return new TYPED_ARRAY[dtype](storedLength(dtype, count));
}

/** @param {unknown} value @param {string} dtype */
export const isTypedOf = (value, dtype) => value instanceof TYPED_ARRAY[dtype];

/** "float32", "float32 or int32", "float32, int32 or bool". @param {string[]} names */
export function orList(names) {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

/** A number as JS and Python both print it in messages. @param {unknown} v */
function showValue(v) {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    const s = JSON.stringify(v);
    return s === undefined ? typeof v : s.length > 40 ? `${s.slice(0, 37)}...` : s;
  } catch {
    return typeof v;
  }
}

// ---------------------------------------------------------------- base64

/** @param {Uint8Array} bytes @returns {string} */
export function encodeBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/**
 * Strict base64 (RFC 4648 alphabet, '=' padding, length a multiple of 4), or null.
 * @param {string} text @returns {Uint8Array|null}
 */
export function decodeBase64(text) {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** JSON data of a typed array: {"base64": little-endian bytes}. @param {TypedData} data */
export function toBase64Data(data) {
  return { base64: encodeBase64(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) };
}

// ---------------------------------------------------------------- data -> typed array

/**
 * Little-endian bytes as the dtype's typed array (a copy when unaligned), exact length.
 * @param {Uint8Array} bytes @param {string} dtype @param {number} count
 * @param {{id: number, op: string}} node @param {string} what e.g. "data.base64 holds"
 */
function fromBytes(bytes, dtype, count, node, what, shapeText) {
  const need = count * TYPED_ARRAY[dtype].BYTES_PER_ELEMENT;
  if (bytes.byteLength !== need) {
    throw nodeError('VALIDATION', node, `${what} ${bytes.byteLength} bytes, shape ${shapeText} ` +
      `of ${dtype} needs ${need}`);
  }
  const Ctor = TYPED_ARRAY[dtype];
  const aligned = bytes.byteOffset % Ctor.BYTES_PER_ELEMENT === 0;
  const src = aligned ? bytes : bytes.slice();
  return new Ctor(src.buffer, src.byteOffset, count);
}

/**
 * Throw unless every value of an integer-like typed array is in its dtype's range (the values of
 * a typed array of the dtype itself are, except bool's).
 */
function checkIntegral(values, dtype, node, name) {
  const [lo, hi, what] = RANGES[dtype];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!(Number.isInteger(v) && v >= lo && v <= hi)) {
      throw nodeError('VALIDATION', node, `${name}[${i}] = ${showValue(v)} is not ${articled(dtype)} ` +
        `(${what})`);
    }
  }
}

/** @param {string} dtype */
const articled = (dtype) => (dtype === 'int32' ? 'an int32' : `a ${dtype}`);

/** One list element as a number of the dtype, or throw naming the index. */
function listValue(v, dtype, node, name, i) {
  if (dtype === 'float32') {
    if (typeof v === 'number') return v;
    if (typeof v === 'string' && NON_FINITE.has(v)) return NON_FINITE.get(v);
    throw nodeError('VALIDATION', node, `${name}[${i}] must be a number or "nan", "inf", ` +
      `"-inf", got ${showValue(v)}`);
  }
  if (dtype === 'bool' && typeof v === 'boolean') return v ? 1 : 0;
  const [lo, hi, what] = RANGES[dtype];
  if (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi) return v;
  throw nodeError('VALIDATION', node, `${name}[${i}] = ${showValue(v)} is not ${articled(dtype)} ` +
    `(${what})`);
}

/**
 * Data of `count` elements of `dtype` as that dtype's typed array. Accepted: a typed array of
 * the dtype (kept without copy: backends never write into checked data; bool values checked
 * 0/1), another numeric typed array (converted, integers checked), an ArrayBuffer or
 * {"base64": "..."} of little-endian bytes (exact length), a plain list (checked per element).
 * @param {unknown} value @param {string} dtype @param {number[]} shape
 * @param {{id: number, op: string}} node @param {string} name "data", or "step 2: feed"
 * @returns {TypedData}
 */
export function toTypedData(value, dtype, shape, node, name) {
  let count = 1;
  for (const d of shape) count *= d;
  count = storedLength(dtype, count); // a block dtype's data are its bytes
  const shapeText = `[${shape.join(', ')}]`;
  if (value instanceof ArrayBuffer) {
    return checked(fromBytes(new Uint8Array(value), dtype, count, node, `${name} buffer holds`,
      shapeText), dtype, node, name);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) &&
      !ArrayBuffer.isView(value)) {
    const keys = Object.keys(value);
    if (keys.length !== 1 || keys[0] !== 'base64' || typeof value.base64 !== 'string') {
      throw nodeError('VALIDATION', node, `${name} object must be {"base64": "<string>"}, got ` +
        `${showValue(value)}`);
    }
    const bytes = decodeBase64(value.base64);
    if (bytes === null) {
      throw nodeError('VALIDATION', node, `${name}.base64 is not base64 (A-Z a-z 0-9 + /, ` +
        '= padding, length a multiple of 4)');
    }
    return checked(fromBytes(bytes, dtype, count, node, `${name}.base64 holds`, shapeText),
      dtype, node, name);
  }
  const isTyped = ArrayBuffer.isView(value) && !(value instanceof DataView);
  if (!isTyped && !Array.isArray(value)) {
    throw nodeError('VALIDATION', node, `${name} must be a list of numbers, a typed array or ` +
      `{"base64": "..."}, got ${showValue(value)}`);
  }
  const list = /** @type {ArrayLike<unknown>} */ (value);
  if (list.length !== count) {
    throw nodeError('VALIDATION', node, `${name} has ${list.length} values, shape ${shapeText} ` +
      `needs ${count}`);
  }
  if (value instanceof BigInt64Array || value instanceof BigUint64Array) {
    throw nodeError('VALIDATION', node, `${name} must hold numbers, got a ${value.constructor.name}`);
  }
  const Ctor = TYPED_ARRAY[dtype];
  if (value instanceof Ctor) return checked(value, dtype, node, name);
  if (isTyped) {
    if (dtype !== 'float32') checkIntegral(list, dtype, node, name);
    if (blockOf(dtype)) return Uint8Array.from(/** @type {ArrayLike<number>} */ (list));
    return Ctor.from(/** @type {ArrayLike<number>} */ (list));
  }
  const out = new Ctor(count);
  for (let i = 0; i < count; i++) out[i] = listValue(list[i], dtype, node, name, i);
  return out;
}

/** bool data holds only 0 and 1; the other dtypes take any bit pattern. */
function checked(data, dtype, node, name) {
  if (dtype === 'bool') checkIntegral(data, dtype, node, name);
  return data;
}

// ---------------------------------------------------------------- result dtype

/**
 * The dtype of a node's result by its op-table row: every operand's dtype must be allowed by
 * its type variable (`types`), operands sharing a variable must agree, and `result_type` is a
 * variable, a literal dtype or "attr:dtype". Throws VALIDATION naming the node and operand.
 * @param {{id: number, op: string, attrs: Record<string, any>}} node
 * @param {import('./optable.mjs').OpSpec} spec @param {string[]} operandDtypes op-table order
 * @returns {string}
 */
export function resultDtype(node, spec, operandDtypes) {
  /** @type {Map<string, {dtype: string, operand: string}>} */
  const bound = new Map();
  operandNames(spec, operandDtypes.length).forEach((operand, i) => {
    const got = operandDtypes[i];
    const variable = spec.operand_types[operandField(operand)];
    const allowed = isDtype(variable) ? [variable] : spec.types[variable];
    if (!allowed.includes(got)) {
      throw nodeError('VALIDATION', node, `operand ${operand} must be ${orList(allowed)}, got ${got}`);
    }
    const first = bound.get(variable);
    if (first && first.dtype !== got) {
      throw nodeError('VALIDATION', node, `operand ${operand} must be ${first.dtype} like ` +
        `operand ${first.operand}, got ${got}`);
    }
    if (!first) bound.set(variable, { dtype: got, operand });
  });
  const rule = spec.result_type;
  if (rule === 'attr:dtype') return node.attrs.dtype;
  if (isDtype(rule)) return rule;
  return bound.get(rule).dtype;
}

// ---------------------------------------------------------------- device words

/**
 * Data as 32-bit words for device memory (wasm heap, GPU buffers, integer textures): the bits of
 * a 4-byte dtype as they are (a view, no copy), bool widened to a u32 0/1 per element (WGSL and
 * GLSL ES have no 8-bit storage type).
 * A block dtype's bytes are packed 4 to a word (little-endian), the last word zero-padded.
 * @param {TypedData} data @param {string} [dtype] @returns {Uint32Array}
 */
export function toDeviceWords(data, dtype = undefined) {
  if (dtype && blockOf(dtype)) return packedWords(/** @type {Uint8Array} */ (data));
  if (data instanceof Uint8Array) return Uint32Array.from(data);
  return new Uint32Array(data.buffer, data.byteOffset, data.length);
}

/**
 * 32-bit device words (a view that may be reused: this copies) as data of `dtype`: bit-exact for
 * 4-byte dtypes, bool narrowed to one byte (any non-zero word reads as 1).
 * @param {Uint32Array} words @param {string} dtype @returns {TypedData}
 */
export function fromDeviceWords(words, dtype) {
  if (dtype === 'bool') {
    const out = new Uint8Array(words.length);
    for (let i = 0; i < words.length; i++) out[i] = words[i] !== 0 ? 1 : 0;
    return out;
  }
  const copy = words.slice();
  return new TYPED_ARRAY[dtype](copy.buffer, copy.byteOffset, copy.length);
}

/** Bytes packed into little-endian 32-bit words, zero-padded. @param {Uint8Array} bytes */
export function packedWords(bytes) {
  const words = new Uint32Array(Math.ceil(bytes.length / 4));
  new Uint8Array(words.buffer).set(bytes);
  return words;
}
