// How a tensor becomes pixels, in one place for every backend: a palette for masks (integers,
// bool, or floats drawn as cells) and a colour map for floats. The WebGL2 presenter builds its
// shader's colour code from these tables (glslColour), the wasm/cpu presenter calls colourOf,
// and present.wgsl (WebGPU, in the browser and natively) holds them as WGSL constants, compared
// with these by backends-js/test/present.test.mjs: a tensor looks the same on every backend.

/** Palette entries, RGB 0..255: index = clamp(floor(v + 0.5), 0, 7). 0 dark, 1 the page's
 * accent (the colours display.draw used for a 0/1 grid), then distinct colours for labels. */
export const PALETTE = Object.freeze([
  [16, 20, 28], [96, 220, 168], [255, 159, 64], [80, 140, 255],
  [235, 87, 87], [187, 134, 252], [255, 214, 102], [230, 230, 230],
]);

/** Colour map stops (viridis at 0, 1/4, 1/2, 3/4, 1), RGB 0..255, linear between stops. */
export const COLOUR_MAP = Object.freeze([
  [68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37],
]);

/** NaN in the colour map: magenta, so it is never mistaken for a value. */
export const NAN_COLOUR = Object.freeze([255, 0, 255]);

/**
 * How to colour one output: 'palette' or 'map' (over [vmin, vmax]).
 * @typedef {{mode: 'palette'|'map', vmin: number, vmax: number}} Colouring
 */

/**
 * The colouring for a dtype when the caller did not choose: a palette for integer and bool
 * tensors (masks, labels), the colour map for floats.
 * @param {string} dtype @param {{palette?: boolean|null, vmin?: number, vmax?: number}} [opts]
 * @returns {Colouring}
 */
export function colouring(dtype, { palette = null, vmin = 0, vmax = 1 } = {}) {
  const usePalette = palette === null || palette === undefined ? dtype !== 'float32' : Boolean(palette);
  return { mode: usePalette ? 'palette' : 'map', vmin: Number(vmin), vmax: Number(vmax) };
}

/** @param {number} v */
const paletteIndex = (v) => Math.min(7, Math.max(0, Math.floor(v + 0.5)));

/**
 * The RGB colour of one value (the reference the shaders follow).
 * @param {number} v @param {Colouring} c @returns {number[]}
 */
export function colourOf(v, c) {
  if (c.mode === 'palette') return PALETTE[Number.isNaN(v) ? 0 : paletteIndex(v)];
  if (Number.isNaN(v)) return NAN_COLOUR;
  const span = c.vmax - c.vmin;
  const t = Math.min(1, Math.max(0, span > 0 ? (v - c.vmin) / span : 0));
  const x = t * (COLOUR_MAP.length - 1);
  const i = Math.min(COLOUR_MAP.length - 2, Math.floor(x));
  const f = x - i;
  return COLOUR_MAP[i].map((a, k) => Math.round(a + (COLOUR_MAP[i + 1][k] - a) * f));
}

/**
 * RGBA pixels of a [height, width] tensor, row-major (the wasm/cpu presenter's image).
 * @param {ArrayLike<number>} data @param {Colouring} c @param {Uint8ClampedArray} out
 */
export function fillPixels(data, c, out) {
  for (let i = 0; i < data.length; i++) {
    const rgb = colourOf(data[i], c);
    out[4 * i] = rgb[0]; out[4 * i + 1] = rgb[1]; out[4 * i + 2] = rgb[2]; out[4 * i + 3] = 255;
  }
  return out;
}

const vec3 = (type, rgb) => `${type}(${rgb.map((x) => (x / 255).toFixed(6)).join(', ')})`;

/**
 * The GLSL function `colour(v, mode, vmin, vmax) -> rgb` from the tables (present.wgsl has the
 * same function in WGSL, written out).
 */
export function glslColour() {
  const list = (table) => table.map((rgb) => vec3('vec3', rgb)).join(',\n    ');
  const n = COLOUR_MAP.length;
  return `const vec3 PALETTE[${PALETTE.length}] = vec3[](
    ${list(PALETTE)});
const vec3 STOPS[${n}] = vec3[](
    ${list(COLOUR_MAP)});
vec3 colour(float v, uint mode, float vmin, float vmax) {
  if (mode == 0u) {
    if (isnan(v)) { return PALETTE[0]; }
    return PALETTE[int(clamp(floor(v + 0.5), 0.0, 7.0))];
  }
  if (isnan(v)) { return ${vec3('vec3', NAN_COLOUR)}; }
  float span = vmax - vmin;
  float t = clamp(span > 0.0 ? (v - vmin) / span : 0.0, 0.0, 1.0);
  float x = t * ${(n - 1).toFixed(1)};
  int i = min(${n - 2}, int(floor(x)));
  return mix(STOPS[i], STOPS[i + 1], x - float(i));
}
`;
}

/** Shader mode numbers (a uniform): 0 palette, 1 colour map. @param {Colouring} c */
export const modeNumber = (c) => (c.mode === 'palette' ? 0 : 1);
