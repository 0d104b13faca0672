// The live view's render shader (display.animate), the same bytes in the browser's WebGPU
// presenter (backends-js/src/present/webgpu.mjs) and the native offscreen one
// (e2e/native_present.py): one fragment per element of a [height, width] tensor read from the
// session's storage buffer, coloured by a palette (mode 0) or the colour map over [vmin, vmax]
// (mode 1). PALETTE, STOPS and the NaN colour are colors.mjs's tables (a test compares them).

struct View { width: u32, height: u32, kind: u32, mode: u32, vmin: f32, vmax: f32 }
@group(0) @binding(0) var<storage, read> cells: array<u32>;
@group(0) @binding(1) var<uniform> view: View;

var<private> PALETTE: array<vec3f, 8> = array<vec3f, 8>(
    vec3f(0.062745, 0.078431, 0.109804),
    vec3f(0.376471, 0.862745, 0.658824),
    vec3f(1.000000, 0.623529, 0.250980),
    vec3f(0.313725, 0.549020, 1.000000),
    vec3f(0.921569, 0.341176, 0.341176),
    vec3f(0.733333, 0.525490, 0.988235),
    vec3f(1.000000, 0.839216, 0.400000),
    vec3f(0.901961, 0.901961, 0.901961));
var<private> STOPS: array<vec3f, 5> = array<vec3f, 5>(
    vec3f(0.266667, 0.003922, 0.329412),
    vec3f(0.231373, 0.321569, 0.545098),
    vec3f(0.129412, 0.568627, 0.549020),
    vec3f(0.368627, 0.788235, 0.384314),
    vec3f(0.992157, 0.905882, 0.145098));
// NaN from its bits: a compiler may fold v != v away
fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn colour(v: f32, mode: u32, vmin: f32, vmax: f32) -> vec3f {
  if (mode == 0u) {
    if (is_nan(v)) { return PALETTE[0]; }
    let p = i32(clamp(floor(v + 0.5), 0.0, 7.0));
    return PALETTE[p];
  }
  if (is_nan(v)) { return vec3f(1.000000, 0.000000, 1.000000); }
  let span = vmax - vmin;
  let t = clamp(select(0.0, (v - vmin) / span, span > 0.0), 0.0, 1.0);
  let x = t * 4.0;
  let i = min(3, i32(floor(x)));
  return mix(STOPS[i], STOPS[i + 1], x - f32(i));
}

@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let xy = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
  return vec4f(xy * 2.0 - 1.0, 0.0, 1.0);
}

// kind: 0 float32 bits, 1 int32, 2 uint32 or bool (u32 0/1)
fn value(word: u32) -> f32 {
  if (view.kind == 0u) { return bitcast<f32>(word); }
  if (view.kind == 1u) { return f32(bitcast<i32>(word)); }
  return f32(word);
}

@fragment fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  let col = min(u32(p.x), view.width - 1u);
  let row = min(u32(p.y), view.height - 1u);
  let v = value(cells[row * view.width + col]);
  return vec4f(colour(v, view.mode, view.vmin, view.vmax), 1.0);
}
