// Example notebooks offered in the Examples menu: one list of cell sources each.

import { COMPILE_EXAMPLES, TORCH_EXAMPLES } from './examples-torch.mjs';
import { LLM_EXAMPLES } from './examples-llm.mjs';

const FIRST = `from gpulab import Graph

def show(result):
    print(result["backend"], result["outputs"]["values"]["data"])

g = Graph()
a = g.tensor([-2, 3, 4])
b = g.tensor([10, 20, 30])
g.submit(show, values=(a * b).relu())   # callback receives [0.0, 60.0, 120.0]`;

const FIRST_SYNC = `# await g.run_async(...) works in every browser (top-level await in a cell). Where the
# browser can suspend Python on a promise (JSPI, Chromium), g.run(...) without await works too,
# as natively. The last expression is shown as a table.
result = await g.run_async(values=(a * b).relu(), total=(a * b).sum())
print(result["backend"], result["outputs"]["total"]["data"])
result`;

const FIRST_AWAIT = `# Another graph on the same tensors; sessions have awaitable forms too:
# s = await g.prepare_async(...); await s.run_async(); await s.run_steps_async(8).
scaled = await g.run_async(values=2 * a - 1.5)
scaled["outputs"]["values"]["data"]`;

const LIFE_SETUP = `import random
import display
from gpulab import Graph

N = 48
random.seed(2024)
start = [[1.0 if random.random() < 0.33 else 0.0 for _ in range(N)] for _ in range(N)]

g = Graph()
board = g.tensor(start)
# A prepared session: the board stays on the GPU; each step's output is carried into the next.
# The awaitable forms (prepare_async, run_async, ...) work in every browser, JSPI or not.
life = await g.prepare_async(carry={board: "board"}, board=board.life())
display.draw(start, name="life", title="generation 0")
print(f"{N}x{N} board, {int(sum(map(sum, start)))} cells alive, session on {life.backend}")`;

const LIFE_RUN = `# 60 generations, one GPU step per run, each frame drawn as it arrives.
for gen in range(1, 61):
    frame = (await life.run_async())["outputs"]["board"]
    display.draw(frame, name="life", title=f"generation {gen}")
print(f"generation {gen}: {sum(frame['data']):.0f} cells alive")`;

const LIFE_BATCH = `# Eight generations per submission: one GPU submission, one read-back.
for _ in range(10):
    frame = (await life.run_steps_async(8))["outputs"]["board"]
    display.draw(frame, name="life", title=f"generation {life.steps_run}")
print(f"generation {life.steps_run}: {sum(frame['data']):.0f} cells alive")`;

const MLP_DATA = `import math
import random
import display
from gpulab import Graph

# Two classes of 2-D points: inside or outside a circle of radius 0.6.
random.seed(0)
N, H = 128, 16
points = [[random.uniform(-1, 1), random.uniform(-1, 1)] for _ in range(N)]
labels = [[1.0, 0.0] if x * x + y * y < 0.36 else [0.0, 1.0] for x, y in points]

def init(rows, cols, scale):
    return [[random.gauss(0, scale) for _ in range(cols)] for _ in range(rows)]

def zeros(v):
    return [[0.0] * len(v[0]) for _ in v] if isinstance(v[0], list) else [0.0] * len(v)

params = {"W1": init(2, H, 1.0), "b1": [0.0] * H, "W2": init(H, 2, 1 / math.sqrt(H)), "b2": [0.0] * 2}
print(f"{N} points, {sum(l[0] for l in labels):.0f} inside the circle; MLP 2-{H}-2 (tanh)")`;

const MLP_GRAPH = `# One training step as a graph: forward, cross-entropy, backward by hand, Adam updates.
g = Graph()
X, Y = g.tensor(points), g.tensor(labels)
W = {k: g.tensor(v) for k, v in params.items()}
M = {k: g.tensor(zeros(v)) for k, v in params.items()}   # Adam's first moments
V = {k: g.tensor(zeros(v)) for k, v in params.items()}   # and second moments
step = g.tensor([1.0])

h = (X @ W["W1"] + W["b1"]).tanh()
logits = h @ W["W2"] + W["b2"]
loss = logits.cross_entropy(Y)

dlogits = logits.cross_entropy_grad(Y)
dpre = (dlogits @ W["W2"].transpose()) * (1 - h * h)
grads = {"W2": h.transpose() @ dlogits, "b2": dlogits.sum(axis=0),
         "W1": X.transpose() @ dpre, "b1": dpre.sum(axis=0)}

carry = {step: step + 1}
for k in params:
    new_w, new_m, new_v = g.adam(W[k], M[k], V[k], grads[k], step, lr=0.05)
    carry.update({W[k]: new_w, M[k]: new_m, V[k]: new_v})

# Weights, moments and the step counter stay on the GPU; only the loss is read back.
train = await g.prepare_async(carry=carry, loss=loss)
print("prepared on", train.backend)`;

const MLP_TRAIN = `losses = []
for i in range(40):
    out = await train.run_steps_async(5)   # five Adam steps per submission
    losses.append(out["outputs"]["loss"]["data"][0])
    display.plot(losses, name="loss", title="training loss (cross-entropy)",
                 xlabel="run (5 Adam steps each)", ylabel="loss")
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} after {train.steps_run} steps")`;

const MLP_EVAL = `# What did it learn? Evaluate the trained weights (downloaded from the session) on the
# training points and on a 40x40 grid of [-1, 1]², and draw P(inside) as an image.
trained = {k: await train.download_async(W[k]) for k in params}
e = Graph()
Wt = {k: e.tensor(t["data"], shape=t["shape"]) for k, t in trained.items()}

def forward(x):
    return ((x @ Wt["W1"] + Wt["b1"]).tanh() @ Wt["W2"] + Wt["b2"]).softmax()

G = 40
grid = [[-1 + 2 * j / (G - 1), 1 - 2 * i / (G - 1)] for i in range(G) for j in range(G)]
res = await e.run_async(train=forward(e.tensor(points)), grid=forward(e.tensor(grid)))
p_train = res["outputs"]["train"]["data"][0::2]
accuracy = sum((p > 0.5) == (l[0] > 0.5) for p, l in zip(p_train, labels)) / N
display.draw(res["outputs"]["grid"]["data"][0::2], shape=(G, G), name="decision",
             title="P(inside the circle) on a 40x40 grid")
print(f"training accuracy {accuracy:.1%} on {res['backend']}")`;

const LIVE_LIFE = `import random
import display
from gpulab import Graph

N = 48
random.seed(7)
start = [[1.0 if random.random() < 0.2 else 0.0 for _ in range(N)] for _ in range(N)]
g = Graph()
board = g.tensor(start)
clicks = g.input([N, N])                        # 1 where the mouse toggled a cell since the last step
toggled = board + clicks - 2 * board * clicks   # XOR of two 0/1 boards, in arithmetic
life = await g.prepare_async(feeds=[clicks], carry={board: "board"}, board=toggled.life())
# A live view: one step per frame, drawn from the GPU's buffer (no read-back on WebGPU).
# Click or drag on the board to toggle cells while it runs; Space pauses; Stop ends it.
view = display.animate(life, "board", feeds={clicks: display.toggles()}, fps=30, palette=True,
                       title="Game of Life: draw with the mouse")
print(f"live on {life.backend}")`;

const LIVE_HEAT = `import display
from gpulab import Graph

# Heat diffusion on a 64x64 torus, painted with a brush. The 5-point stencil is built from
# matmuls: A = S + S^T - 2I with S a cyclic shift, so A @ U + U @ A is the Laplacian of U.
N = 64
A = [[(1.0 if (i - j) % N in (1, N - 1) else 0.0) - (2.0 if i == j else 0.0) for j in range(N)]
     for i in range(N)]
g = Graph()
heat = g.tensor([[0.0] * N for _ in range(N)])
paint = g.input([N, N])                          # the brush: 0.6 under the pressed pointer
L = g.tensor(A)
step = (heat + 0.2 * (L @ heat + heat @ L)) * 0.995 + paint
sim = await g.prepare_async(feeds=[paint], carry={heat: "heat"},
                            heat=step.clamp(min=0.0, max=1.0))
view = display.animate(sim, "heat", feeds={paint: display.brush(radius=3, value=0.6)}, fps=30,
                       vmin=0.0, vmax=1.0, title="heat: paint with the mouse")
print(f"live on {sim.backend}: press and drag to paint heat")`;

// ---- your own WGSL kernels (docs/playground.md "Your own WGSL kernels") ----

const WGSL_SAXPY = `from gpulab import Graph

# Your own compute shader. The binding convention: inputs at @binding(0), (1), ... (read-only
# storage), then one read_write buffer per output, then a uniform struct of the params.
SAXPY = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
struct Params { a: f32, n: u32 }
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  if (i < p.n) {
    out[i] = p.a * x[i] + y[i];
  }
}
"""
n = 1000
g = Graph()
x = g.tensor([i / 10 for i in range(n)])
y = g.tensor([1.0] * n)
out = g.wgsl(SAXPY, inputs=[x, y], outputs={"out": ((n,), "float32")},
             workgroups=(n + 63) // 64, params={"a": 2.0, "n": n})
# its output is a Tensor like any other: use it in the rest of the graph
res = await g.run_async(saxpy=out, total=out.sum())
print(res["backend"], res["outputs"]["saxpy"]["data"][:4], res["outputs"]["total"]["data"])`;

const WGSL_MATMUL = `import time
from gpulab import Graph

# A 16x16 tiled matmul with workgroup memory, timed against gpulab's own matmul.
TILED = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
struct Dims { m: u32, k: u32, n: u32 }
@group(0) @binding(3) var<uniform> d: Dims;

const T = 16u;
var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(local_invocation_id) l: vec3u) {
  var acc = 0.0;
  for (var t = 0u; t < (d.k + T - 1u) / T; t++) {
    let ka = t * T + l.x;
    let kb = t * T + l.y;
    ta[l.y * T + l.x] = select(0.0, a[g.y * d.k + ka], g.y < d.m && ka < d.k);
    tb[l.y * T + l.x] = select(0.0, b[kb * d.n + g.x], kb < d.k && g.x < d.n);
    workgroupBarrier();
    for (var k = 0u; k < T; k++) {
      acc += ta[l.y * T + k] * tb[k * T + l.x];
    }
    workgroupBarrier();
  }
  if (g.y < d.m && g.x < d.n) {
    c[g.y * d.n + g.x] = acc;
  }
}
"""
M = K = N = 128
g = Graph()
A = g.tensor([[((i * 7 + j * 3) % 11) / 11 for j in range(K)] for i in range(M)])
B = g.tensor([[((i * 5 + j) % 13) / 13 for j in range(N)] for i in range(K)])
mine = g.wgsl(TILED, inputs=[A, B], outputs={"c": ((M, N), "float32")},
              workgroups=((N + 15) // 16, (M + 15) // 16), params={"m": M, "k": K, "n": N})
for name, t in (("yours", mine), ("ours", A @ B)):
    await g.run_async(c=t)                    # the first run compiles the kernel
    t0 = time.perf_counter()
    for _ in range(5):
        r = await g.run_async(c=t)
    print(f"{name}: {(time.perf_counter() - t0) / 5 * 1000:.1f} ms per run on {r['backend']}")
both = await g.run_async(yours=mine, ours=A @ B)
diff = max(abs(p - q) for p, q in zip(both["outputs"]["yours"]["data"], both["outputs"]["ours"]["data"]))
print(f"largest difference: {diff:.2e}")`;

const WGSL_HEAT = `import display
from gpulab import Graph

# Heat diffusion on a ring of 256 cells: your stencil steps a session; u stays on the GPU and
# each step's output is carried into the next (carried state).
HEAT = """
@group(0) @binding(0) var<storage, read> u: array<f32>;
@group(0) @binding(1) var<storage, read_write> next: array<f32>;
struct P { k: f32 }
@group(0) @binding(2) var<uniform> p: P;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let n = arrayLength(&u);
  let i = id.x;
  if (i >= n) { return; }
  let left = u[(i + n - 1u) % n];
  let right = u[(i + 1u) % n];
  next[i] = u[i] + p.k * (left - 2.0 * u[i] + right);
}
"""
n = 256
g = Graph()
u = g.tensor([100.0 if 120 <= i < 136 else 0.0 for i in range(n)])
step = g.wgsl(HEAT, inputs=[u], outputs={"next": ((n,), "float32")},
              workgroups=(n + 63) // 64, params={"k": 0.25})
sim = await g.prepare_async(carry={u: "next"}, next=step)
for frame in range(20):
    out = (await sim.run_steps_async(50))["outputs"]["next"]
    display.plot(out["data"], name="heat", title=f"heat after {sim.steps_run} steps",
                 xlabel="cell", ylabel="temperature")
print(f"total heat {sum(out['data']):.3f} after {sim.steps_run} steps on {sim.backend}")`;

const ONNX_DIGITS = `import display
import gpulab.onnx
from gpulab.onnx.examples import digits_model, digits_samples

# A small CNN trained on scikit-learn's 8x8 digits (scripts/train_digits.py), loaded from its
# .onnx bytes by gpulab's own protobuf reader and run on this page's backend.
model = gpulab.onnx.load(digits_model())
print(model)
for s in digits_samples():
    display.draw(s["pixels"], shape=[8, 8], name=f"digit-{s['label']}", scale=8,
                 title=f"test image, label {s['label']}")
    out = await model.run_async({"image": s["pixels"]})
    probs = out["probabilities"]["data"]
    best = max(range(10), key=lambda k: probs[k])
    print(f"label {s['label']}: class {best} (p = {probs[best]:.3f}); probabilities "
          + " ".join(f"{p:.2f}" for p in probs))`;

const MINILM_SEARCH = `import display
from gpulab import Graph
from gpulab.models import minilm

# all-MiniLM-L6-v2 (sentence-transformers' checkpoint, from the gpulab[models] package that
# \`gpulab serve\` serves): 6 BERT layers as gpulab graphs on this page's backend. The weights
# load once (a progress bar); minilm.load_async(quantize="q6_k") loads 36 MB instead of 91 MB.
model = await minilm.load_async()
docs = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing the violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "GPUs multiply matrices very quickly.",
    "Training a neural network needs gradients.",
    "The weather is sunny and warm today.",
]
vectors = await model.encode_async(docs)  # one submission: the batch padded to one length
# The embeddings have unit length, so cosine similarity is a matrix product (on the GPU too).
g = Graph()
e = g.tensor(vectors)
out = await g.run_async(sim=e @ e.T)
sim = out["outputs"]["sim"]
display.draw(sim, name="similarity", scale=24,
             title="cosine similarity, sentence i (row) vs j (column): light = similar")
for i, d in enumerate(docs):
    print(f"{i:2d}  {d}")
query = "Someone is playing an instrument."
[q] = await model.encode_async([query])
scores = [sum(a * b for a, b in zip(q, v)) for v in vectors]
print(f"\\nnearest to {query!r} (on {out['backend']}):")
for k in sorted(range(len(docs)), key=lambda k: -scores[k])[:3]:
    print(f"  {scores[k]:.3f}  {docs[k]}")`;

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const EXAMPLES = [
  { id: 'first', title: 'First graph: (a * b).relu()', cells: [FIRST, FIRST_SYNC, FIRST_AWAIT] },
  { id: 'life', title: 'Game of Life on the GPU', cells: [LIFE_SETUP, LIFE_RUN, LIFE_BATCH] },
  ...TORCH_EXAMPLES, // 'mlp': the PyTorch way (loss.backward()), web/examples-torch.mjs
  { id: 'mlp-manual', title: 'Train a small MLP with Adam, backward by hand', cells: [MLP_DATA, MLP_GRAPH, MLP_TRAIN, MLP_EVAL] },
  { id: 'live', title: 'Live views: draw on Life, paint heat', cells: [LIVE_LIFE, LIVE_HEAT] },
  { id: 'wgsl', title: 'Your own WGSL kernels (WebGPU): saxpy, a tiled matmul, heat', cells: [WGSL_SAXPY, WGSL_MATMUL, WGSL_HEAT] },
  { id: 'onnx', title: 'An ONNX model: a digits CNN', cells: [ONNX_DIGITS] },
  { id: 'minilm', title: 'Semantic search with MiniLM', cells: [MINILM_SEARCH] },
  ...COMPILE_EXAMPLES,
  ...LLM_EXAMPLES, // 'llm': a GGUF model streaming text, web/examples-llm.mjs
];
