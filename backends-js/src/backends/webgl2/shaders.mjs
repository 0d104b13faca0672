// GLSL sources and compiled programs. Every shader is one file in kernels/glsl/, fetched at
// run time next to this module (so the browser reads the same bytes that are reviewed); a
// program is "#version 300 es" + the pass's #defines + common.glsl + included files + the kernel
// file. Programs are compiled once per (file, defines) and cached for the context's life.
import { GpuLabError } from '../../errors.mjs';

/** @param {string} file */
const sourceUrl = (file) => new URL(`../../../../kernels/glsl/${file}`, import.meta.url);

/** file name -> Promise<text>, shared by every context of this page or worker. */
const sourceCache = new Map();

/** @param {string} file */
function fetchSource(file) {
  if (!sourceCache.has(file)) {
    const p = fetch(sourceUrl(file)).then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return res.text();
    }).catch((err) => {
      sourceCache.delete(file);
      throw new GpuLabError('BACKEND', `cannot load shader kernels/glsl/${file}: ${err.message}`);
    });
    sourceCache.set(file, p);
  }
  return sourceCache.get(file);
}

const INCLUDE = /^\/\/! include (\S+)$/gm;

/** A kernel file with its `//! include x.glsl` lines replaced by x's text (once each). */
async function expandedSource(file) {
  const text = await fetchSource(file);
  const parts = [];
  for (const m of text.matchAll(INCLUDE)) parts.push(await expandedSource(m[1]));
  return parts.join('\n') + '\n' + text.replace(INCLUDE, '');
}

const VERTEX_SOURCE = `#version 300 es
// One triangle that covers the viewport; no vertex buffers.
void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}`;

/**
 * @typedef {object} GlProgram
 * @property {WebGLProgram} handle
 * @property {Map<string, WebGLUniformLocation|null>} locations
 * @property {string} key
 */

export class ShaderCache {
  /**
   * @param {WebGL2RenderingContext} gl
   * @param {(file: string, source: string) => string} [transform] test hook: edits a program's
   *   fragment source before compiling (to inject a GLSL error)
   */
  constructor(gl, transform = (file, source) => source) {
    this.gl = gl;
    this.transform = transform;
    /** @type {Map<string, GlProgram>} */
    this.programs = new Map();
    /** @type {Map<string, Promise<string>>} */
    this.fragmentSources = new Map();
    this.vertex = null;
  }

  /** Program key of a shader file and its defines. */
  static key(file, defines) {
    return `${file}|${Object.entries(defines).map(([k, v]) => `${k}=${v}`).join(',')}`;
  }

  /** Fetch (once) what a set of passes needs; compile later with get(). */
  async load(passes) {
    await Promise.all([...new Set(passes.map((p) => p.shader))].map(async (file) => {
      if (!this.fragmentSources.has(file)) {
        this.fragmentSources.set(file, Promise.all([fetchSource('common.glsl'), expandedSource(file)])
          .then(([common, body]) => `${common}\n${body}`));
      }
      await this.fragmentSources.get(file);
    }));
  }

  /**
   * The linked program for a shader file and defines (load() must have fetched the file).
   * @param {string} file
   * @param {Record<string, string|number>} defines
   * @returns {Promise<GlProgram>}
   */
  async get(file, defines) {
    const key = ShaderCache.key(file, defines);
    let prog = this.programs.get(key);
    if (!prog) {
      const body = await this.fragmentSources.get(file);
      const head = Object.entries(defines).map(([k, v]) => `#define ${k} ${v}`).join('\n');
      prog = this.link(key, this.transform(file, `#version 300 es\n${head}\n${body}`));
      this.programs.set(key, prog);
    }
    return prog;
  }

  /** @param {number} type @param {string} source @param {string} key */
  compile(type, source, key) {
    const gl = this.gl;
    const sh = gl.createShader(type);
    gl.shaderSource(sh, source);
    gl.compileShader(sh);
    if (!gl.getShaderParameter(sh, gl.COMPILE_STATUS) && !gl.isContextLost()) {
      const log = gl.getShaderInfoLog(sh);
      gl.deleteShader(sh);
      throw new GpuLabError('BACKEND', `GLSL compile error in ${key}: ${log}`);
    }
    return sh;
  }

  /** @param {string} key @param {string} fragment */
  link(key, fragment) {
    const gl = this.gl;
    this.vertex ??= this.compile(gl.VERTEX_SHADER, VERTEX_SOURCE, 'vertex');
    const fs = this.compile(gl.FRAGMENT_SHADER, fragment, key);
    const handle = gl.createProgram();
    gl.attachShader(handle, this.vertex);
    gl.attachShader(handle, fs);
    gl.linkProgram(handle);
    gl.deleteShader(fs);  // flagged: freed with the program
    if (!gl.getProgramParameter(handle, gl.LINK_STATUS) && !gl.isContextLost()) {
      const log = gl.getProgramInfoLog(handle);
      gl.deleteProgram(handle);
      throw new GpuLabError('BACKEND', `GLSL link error in ${key}: ${log}`);
    }
    return { handle, key, locations: new Map() };
  }

  /** @param {GlProgram} prog @param {string} name */
  location(prog, name) {
    if (!prog.locations.has(name)) prog.locations.set(name, this.gl.getUniformLocation(prog.handle, name));
    return prog.locations.get(name);
  }

  dispose() {
    for (const p of this.programs.values()) this.gl.deleteProgram(p.handle);
    if (this.vertex) this.gl.deleteShader(this.vertex);
    this.programs.clear();
    this.vertex = null;
  }
}
