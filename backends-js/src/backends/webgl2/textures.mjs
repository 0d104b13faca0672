// Tensor storage: one R32F texture per tensor, with its own framebuffer so a kernel can render
// into it. Kernels may also use RGBA32F scratch textures ("packed": 4 values per texel, the
// layout below counted in texels, optionally with a fixed width so that texel rows are matrix
// rows), and 4-layer RGBA32F texture arrays that one draw fills through 4 color attachments
// (matmul's 4x4 output blocks).
// Layout (docs/webgl2.md): width = min(ceil(sqrt(n)), MAX_TEXTURE_SIZE),
// height = ceil(n / width), element i at texel (i % width, i / width). Textures are pooled by size: a program gives its
// textures back on dispose and the next program of the same shapes reuses them, so repeated
// executes of one graph create no new textures. Free textures beyond a byte budget are deleted,
// oldest first, so graphs of ever-new shapes do not pile up GPU memory. The backend's dispose
// deletes them all.
// Dtypes: float32 tensors are R32F; int32 tensors R32I and uint32/bool tensors R32UI (bool as a
// 0/1 word), uploaded and read back as integers, so every bit pattern survives (a float texture
// would flush the small integers, float denormals, and may quiet NaN patterns). Integer
// textures are never filtered or blended; copies between them are blits (docs/webgl2.md).
import { GpuLabError } from '../../errors.mjs';
import { blockOf, fromDeviceWords, toDeviceWords } from '../../dtypes.mjs';

/**
 * @typedef {object} Tex
 * @property {WebGLTexture} texture
 * @property {WebGLFramebuffer} framebuffer
 * @property {number} w
 * @property {number} h
 * @property {number} channels 1 (R32F) or 4 (RGBA32F, packed scratch)
 * @property {number} layers 1 (TEXTURE_2D) or 4 (TEXTURE_2D_ARRAY, one color attachment each)
 * @property {number} target gl.TEXTURE_2D or gl.TEXTURE_2D_ARRAY
 * @property {TexKind} kind what a texel holds: 'float' (R32F/RGBA32F), 'int' (R32I), 'uint' (R32UI)
 *
 * @typedef {'float'|'int'|'uint'} TexKind
 * @typedef {{channels?: number, layers?: number, width?: number, kind?: TexKind}} TexFormat
 *   channels 1 or 4; layers 1 or 4; width: a fixed texture width (0: the square-ish default);
 *   kind: 'float' unless an integer tensor (one channel, one layer)
 */

/** The texture kind of a tensor of `dtype`. @param {string} dtype @returns {TexKind} */
export function texKindOf(dtype) {
  if (dtype === 'int32') return 'int';
  // a block-quantized tensor is its bytes packed 4 to a word (quant.glsl reads them)
  if (blockOf(dtype)) return 'uint';
  return dtype === 'uint32' || dtype === 'bool' ? 'uint' : 'float';
}

/**
 * Texture size for n elements, or LIMIT when the device's textures are too small.
 * @param {number} n
 * @param {number} maxSize MAX_TEXTURE_SIZE
 * @param {number} [width] a fixed width (0: the default)
 */
export function layoutFor(n, maxSize, width = 0) {
  // Square-ish, not one long row: a software rasterizer shades 2x2 quads and hands rows to its
  // threads, so a 1-texel-high target wastes half of every quad and runs on one thread.
  const w = Math.max(1, Math.min(width || Math.ceil(Math.sqrt(n)), maxSize));
  const h = Math.max(1, Math.ceil(n / w));
  if (h > maxSize) {
    throw new GpuLabError('LIMIT', `a tensor of ${n} elements needs a ${w}x${h} texture; ` +
      `this WebGL2 device allows ${maxSize}x${maxSize}`);
  }
  return { w, h };
}

export class TexturePool {
  /**
   * @param {WebGL2RenderingContext} gl
   * @param {number} maxSize
   * @param {number} [maxFreeBytes] how much the free textures may hold
   */
  constructor(gl, maxSize, maxFreeBytes = 256 * 2 ** 20) {
    this.gl = gl;
    this.maxSize = maxSize;
    this.maxFreeBytes = maxFreeBytes;
    /** @type {Map<string, Tex[]>} free textures by sizeKey */
    this.free = new Map();
    /** @type {Set<Tex>} free textures, oldest release first */
    this.freeOrder = new Set();
    this.freeBytes = 0;
    /** @type {Set<Tex>} every texture not yet deleted */
    this.all = new Set();
    this.created = 0;
    this.reused = 0;
  }

  /**
   * A texture for n texels (per layer): a free one of the same size and format, or a new one.
   * @param {number} n @param {TexFormat} [format]
   */
  acquire(n, { channels = 1, layers = 1, width = 0, kind = 'float' } = {}) {
    const { w, h } = layoutFor(n, this.maxSize, width);
    const stack = this.free.get(sizeKey(w, h, channels, layers, kind));
    if (stack?.length) {
      this.reused++;
      const tex = stack.pop();
      this.freeOrder.delete(tex);
      this.freeBytes -= bytesOf(tex);
      return tex;
    }
    return this.create(w, h, channels, layers, kind);
  }

  /**
   * @param {number} w @param {number} h @param {number} channels @param {number} layers
   * @param {TexKind} [kind]
   */
  create(w, h, channels, layers, kind = 'float') {
    const gl = this.gl;
    const texture = gl.createTexture();
    const target = layers > 1 ? gl.TEXTURE_2D_ARRAY : gl.TEXTURE_2D;
    const internal = { int: gl.R32I, uint: gl.R32UI }[kind] ?? (channels === 4 ? gl.RGBA32F : gl.R32F);
    gl.bindTexture(target, texture);
    if (layers > 1) gl.texStorage3D(target, 1, internal, w, h, layers);
    else gl.texStorage2D(target, 1, internal, w, h);
    // texelFetch ignores filtering, but an incomplete texture would read as zero on some drivers.
    gl.texParameteri(target, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(target, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    const framebuffer = gl.createFramebuffer();
    gl.bindFramebuffer(gl.FRAMEBUFFER, framebuffer);
    if (layers > 1) {
      // Layer i is color attachment i: one draw writes all layers (out locations 0..layers-1).
      const buffers = [];
      for (let i = 0; i < layers; i++) {
        gl.framebufferTextureLayer(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + i, texture, 0, i);
        buffers.push(gl.COLOR_ATTACHMENT0 + i);
      }
      gl.drawBuffers(buffers);
    } else {
      gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, texture, 0);
    }
    /** @type {Tex} */
    const tex = { texture, framebuffer, w, h, channels, layers, target, kind };
    this.all.add(tex);
    this.created++;
    return tex;
  }

  /** @param {Tex} tex */
  release(tex) {
    if (!this.all.has(tex)) return;
    const key = texKey(tex);
    if (!this.free.has(key)) this.free.set(key, []);
    this.free.get(key).push(tex);
    this.freeOrder.add(tex);
    this.freeBytes += bytesOf(tex);
    while (this.freeBytes > this.maxFreeBytes) this.evict(this.freeOrder.values().next().value);
  }

  /** Delete a free texture. @param {Tex} tex */
  evict(tex) {
    const stack = this.free.get(texKey(tex));
    stack.splice(stack.indexOf(tex), 1);
    this.freeOrder.delete(tex);
    this.freeBytes -= bytesOf(tex);
    this.all.delete(tex);
    this.gl.deleteFramebuffer(tex.framebuffer);
    this.gl.deleteTexture(tex.texture);
  }

  stats() {
    let free = 0;
    for (const s of this.free.values()) free += s.length;
    return { liveTextures: this.all.size, liveFramebuffers: this.all.size, free,
      freeBytes: this.freeBytes, created: this.created, reused: this.reused };
  }

  dispose() {
    for (const tex of this.all) {
      this.gl.deleteFramebuffer(tex.framebuffer);
      this.gl.deleteTexture(tex.texture);
    }
    this.all.clear();
    this.free.clear();
    this.freeOrder.clear();
    this.freeBytes = 0;
  }
}

/** @param {Tex} tex */
const bytesOf = (tex) => tex.w * tex.h * 4 * tex.channels * tex.layers;

/**
 * Pool key of a texture size and format.
 * @param {number} w @param {number} h @param {number} channels @param {number} layers
 */
export const sizeKey = (w, h, channels, layers, kind = 'float') =>
  `${w}x${h}x${channels}x${layers}${kind === 'float' ? '' : kind}`;

/** @param {Tex} tex */
export const texKey = (tex) => sizeKey(tex.w, tex.h, tex.channels, tex.layers, tex.kind);

/**
 * The upload format, type and array view of a texture's texels.
 * @param {WebGL2RenderingContext} gl @param {Tex} tex @param {ArrayBufferView} data
 */
function texelsOf(gl, tex, data) {
  if (tex.kind === 'float') return [tex.channels === 4 ? gl.RGBA : gl.RED, gl.FLOAT, data];
  const words = toDeviceWords(/** @type {any} */ (data));
  if (tex.kind === 'int') {
    return [gl.RED_INTEGER, gl.INT, new Int32Array(words.buffer, words.byteOffset, words.length)];
  }
  return [gl.RED_INTEGER, gl.UNSIGNED_INT, words];
}

/**
 * Upload n values into a texture (full rows, then the partial last row): float32 data into a
 * float texture (a packed RGBA32F tensor takes 4 consecutive values per texel: packing.mjs),
 * the 32-bit words of any other dtype into an integer one.
 * @param {WebGL2RenderingContext} gl
 * @param {Tex} tex
 * @param {import('../../dtypes.mjs').TypedData} data
 */
export function upload(gl, tex, data) {
  gl.bindTexture(gl.TEXTURE_2D, tex.texture);
  const [format, type, texels] = texelsOf(gl, tex, data);
  const per = tex.kind === 'float' ? tex.channels : 1;  // values per texel
  const count = Math.ceil(texels.length / per);
  const rows = Math.floor(count / tex.w);
  if (rows > 0) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, tex.w, rows, format, type, texels, 0);
  const rest = count - rows * tex.w;
  if (rest > 0) {
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, rows, rest, 1, format, type, texels, rows * tex.w * per);
  }
}

/**
 * Read n values of `dtype` from an integer texture: readPixels(RGBA_INTEGER) is the format
 * every implementation allows for integer framebuffers; the red channel holds the word.
 * @param {WebGL2RenderingContext} gl @param {Tex} tex @param {number} n @param {string} dtype
 */
function downloadInteger(gl, tex, n, dtype) {
  gl.bindFramebuffer(gl.READ_FRAMEBUFFER, tex.framebuffer);
  const rows = Math.ceil(n / tex.w);
  const buf = tex.kind === 'int' ? new Int32Array(tex.w * rows * 4) : new Uint32Array(tex.w * rows * 4);
  gl.readPixels(0, 0, tex.w, rows, gl.RGBA_INTEGER, tex.kind === 'int' ? gl.INT : gl.UNSIGNED_INT, buf);
  const bits = new Uint32Array(buf.buffer);
  const words = new Uint32Array(n);
  for (let i = 0; i < n; i++) words[i] = bits[i * 4];
  return fromDeviceWords(words, dtype);
}

/**
 * Copy one tensor texture into another of the same size and kind, bit for bit (a blit: no
 * shader, so integer textures need no integer copy program).
 * @param {WebGL2RenderingContext} gl @param {Tex} from @param {Tex} to
 */
export function blitCopy(gl, from, to) {
  gl.bindFramebuffer(gl.READ_FRAMEBUFFER, from.framebuffer);
  gl.bindFramebuffer(gl.DRAW_FRAMEBUFFER, to.framebuffer);
  gl.blitFramebuffer(0, 0, from.w, from.h, 0, 0, to.w, to.h, gl.COLOR_BUFFER_BIT, gl.NEAREST);
  gl.bindFramebuffer(gl.DRAW_FRAMEBUFFER, null);
}

/**
 * Read n float32 values back, bit for bit (readPixels of FLOAT data). Reads RED when the
 * implementation offers it for R32F, else RGBA (always allowed for float targets) and keeps .r.
 * @param {WebGL2RenderingContext} gl
 * @param {Tex} tex
 * @param {number} n
 * @param {string} [dtype] of an integer texture's tensor (int32, uint32, bool)
 */
export function download(gl, tex, n, dtype = 'float32') {
  if (tex.kind && tex.kind !== 'float') return downloadInteger(gl, tex, n, dtype);
  gl.bindFramebuffer(gl.READ_FRAMEBUFFER, tex.framebuffer);
  if (tex.channels === 4) {
    // a packed tensor (packing.mjs): its texels in order are its values in order
    const buf = new Float32Array(tex.w * Math.ceil(n / 4 / tex.w) * 4);
    gl.readPixels(0, 0, tex.w, buf.length / 4 / tex.w, gl.RGBA, gl.FLOAT, buf);
    return buf.length === n ? buf : buf.slice(0, n);
  }
  const red = readsRed(gl);
  const rows = Math.ceil(n / tex.w);
  const channels = red ? 1 : 4;
  const buf = new Float32Array(tex.w * rows * channels);
  gl.readPixels(0, 0, tex.w, rows, red ? gl.RED : gl.RGBA, gl.FLOAT, buf);
  if (red) return buf.length === n ? buf : buf.slice(0, n);
  // Copy the bits as integers: a float round trip through JS may quiet a NaN payload.
  const bits = new Uint32Array(buf.buffer);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = bits[i * 4];
  return new Float32Array(out.buffer);
}

/** @type {WeakMap<WebGL2RenderingContext, boolean>} */
const redReadable = new WeakMap();

/** Whether readPixels(RED, FLOAT) is allowed on an R32F framebuffer (asked once per context). */
function readsRed(gl) {
  if (!redReadable.has(gl)) {
    redReadable.set(gl, gl.getParameter(gl.IMPLEMENTATION_COLOR_READ_FORMAT) === gl.RED &&
      gl.getParameter(gl.IMPLEMENTATION_COLOR_READ_TYPE) === gl.FLOAT);
  }
  return redReadable.get(gl);
}
