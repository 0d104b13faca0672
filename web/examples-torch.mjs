// The PyTorch examples: a character-level GPT trained on pasted text and sampled; the MLP trained the PyTorch way (`import torch` is gpulab.torch in the
// page: web/py/torch_shim.py), and torch.compile(step, training=True) with a prepared session
// and a live loss plot. Both use the awaitable forms, so they run in every browser (JSPI or not).

const MLP_DATA = `import random
import display
import torch   # in this page: gpulab.torch, a PyTorch subset that records GPU Lab graphs

# Two classes of 2-D points: inside (class 0) or outside (class 1) a circle of radius 0.6.
random.seed(0)
N, H = 128, 16
points = [[random.uniform(-1, 1), random.uniform(-1, 1)] for _ in range(N)]
labels = [0 if x * x + y * y < 0.36 else 1 for x, y in points]
X, Y = torch.tensor(points), torch.tensor(labels)
print(f"{N} points, {labels.count(0)} inside the circle; MLP 2-{H}-2 (tanh)")`;

const MLP_MODEL = `# The model and optimizer as in PyTorch; their weights start from gpulab.torch's seeded stream.
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, H), torch.nn.Tanh(), torch.nn.Linear(H, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.05)
print(sum(p.numel() for p in model.parameters()), "parameters")`;

const MLP_TRAIN = `# The PyTorch loop: zero_grad, forward, loss, backward (autograd on the graph), step. Each step
# is one graph run: forward, gradients and the Adam update together. (opt.step() and
# loss.item() work too where the browser lets Python wait: JSPI, Chromium.)
losses = []
for i in range(200):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(X), Y)
    loss.backward()
    await opt.step_async()
    if i % 5 == 4:
        losses.append(loss.item())   # its value came back with the step
        display.plot(losses, name="loss", title="training loss (cross-entropy)",
                     xlabel="step / 5", ylabel="loss")
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} after 200 steps")`;

const MLP_EVAL = `# What did it learn? P(inside) on the training points and on a 40x40 grid of [-1, 1]².
G = 40
grid = [[-1 + 2 * j / (G - 1), 1 - 2 * i / (G - 1)] for i in range(G) for j in range(G)]
with torch.no_grad():
    p_train = torch.softmax(model(X), dim=1)[:, 0]
    p_grid = torch.softmax(model(torch.tensor(grid)), dim=1)[:, 0]
await torch.fetch_async(p_train, p_grid)
accuracy = sum((p > 0.5) == (l == 0) for p, l in zip(p_train.tolist(), labels)) / N
display.draw(p_grid.tolist(), shape=(G, G), name="decision",
             title="P(inside the circle) on a 40x40 grid")
print(f"training accuracy {accuracy:.1%}")`;

const COMPILE_SETUP = `import random
import display
import torch   # gpulab.torch

# A ring: class 0 between radius 0.5 and 0.8, class 1 elsewhere; a fresh batch every step.
random.seed(1)
def batch(n=64):
    pts = [[random.uniform(-1, 1), random.uniform(-1, 1)] for _ in range(n)]
    return torch.tensor(pts), torch.tensor([0 if 0.25 < x * x + y * y < 0.64 else 1 for x, y in pts])

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                            torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.01)

def train_step(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss

# One training step captured as one graph (exactly one zero_grad, backward and step).
step = torch.compile(train_step, training=True)
# Called directly it uploads the weights and Adam's state and reads them back: a pending result
# (await it, or .submit(callback); natively it has run when the call returns).
loss = await step(*batch())
print(f"one compiled step: loss {loss.item():.4f}")`;

const COMPILE_TRAIN = `# prepare(): the step recorded once; weights, gradients and Adam's state stay on the GPU. Each
# steps() submission runs 8 steps (batches and dropout counters fed per step) and calls back
# with the last loss, which the plot shows as it arrives.
prep = step.prepare(*batch())
losses = []

def show(loss):
    losses.append(loss.item())
    display.plot(losses, name="ring-loss", title="training loss (last of every 8 steps)",
                 xlabel="submission (8 steps each)", ylabel="loss")

for _ in range(30):
    prep.steps(show, [batch() for _ in range(8)])
await prep.sync()    # the weights, gradients and optimizer.state back into the model
prep.dispose()
print(f"{prep.steps_run} steps: loss {losses[0]:.3f} -> {losses[-1]:.3f}")`;

const COMPILE_EVAL = `# The trained model, compiled for inference: one graph, a pending result.
model.eval()
predict = torch.compile(lambda x: torch.softmax(model(x), dim=1)[:, 0])
G = 40
grid = [[-1 + 2 * j / (G - 1), 1 - 2 * i / (G - 1)] for i in range(G) for j in range(G)]
p_grid = await predict(torch.tensor(grid))
xt, yt = batch(512)
p_test = await predict(xt)
accuracy = sum((p > 0.5) == (y == 0) for p, y in zip(p_test.tolist(), yt.tolist())) / 512
display.draw(p_grid.tolist(), shape=(G, G), name="ring", title="P(on the ring) on a 40x40 grid")
print(f"test accuracy {accuracy:.1%}")`;

const CHAR_DATA = `import random
import display
import torch   # in this page: gpulab.torch, a PyTorch subset that records GPU Lab graphs

# The text to learn from: paste your own here (a few hundred characters or more), or upload a
# .txt file: text = (await (await display.pick_file(".txt")).text())
text = """First Citizen: Before we proceed any further, hear me speak.
All: Speak, speak.
First Citizen: You are all resolved rather to die than to famish?
All: Resolved. resolved.
First Citizen: First, you know Caius Marcius is chief enemy to the people.
All: We know't, we know't.
First Citizen: Let us kill him, and we'll have corn at our own price. Is't a verdict?
All: No more talking on't; let it be done: away, away!"""
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = [stoi[c] for c in text]
V, T, B = len(chars), 16, 16   # vocabulary, context, batch
random.seed(0)

def batch():
    starts = [random.randrange(len(data) - T) for _ in range(B)]
    x = [data[s : s + T] for s in starts]
    y = [data[s + 1 : s + T + 1] for s in starts]
    return torch.tensor(x), torch.tensor(y)

print(f"{len(text)} characters, {V} distinct: {''.join(chars)!r}")`;

const CHAR_MODEL = `# A GPT as small as they come: token and position embeddings, one transformer block (causal
# self-attention, an MLP), a linear head over the characters.
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # each position sees the past
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))

class CharGPT(nn.Module):
    def __init__(self, vocab, ctx, d=32, heads=4):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.block = Block(d, heads)
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.block(x)))

torch.manual_seed(0)
model = CharGPT(V, T)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
print(sum(p.numel() for p in model.parameters()), "parameters")`;

const CHAR_TRAIN = `# Train: predict every next character of random windows (cross-entropy) with Adam, each
# step one graph run (forward, gradients and the update). The plot shows the loss as it falls.
losses = []
STEPS = 120
for i in range(STEPS):
    x, y = batch()
    opt.zero_grad()
    loss = F.cross_entropy(model(x).view(B * T, V), y.view(B * T))
    loss.backward()
    await opt.step_async()
    if i % 5 == 4:
        losses.append(loss.item())
        display.plot(losses, name="char-loss", title="training loss (cross-entropy, nats/char)",
                     xlabel="step / 5", ylabel="loss")
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} after {STEPS} steps")`;

const CHAR_SAMPLE = `# Sample: feed the last T characters, draw the next one from the softmax of the last position.
model.eval()
out = list(text[:T])
random.seed(1)
with torch.no_grad():
    for _ in range(120):
        idx = torch.tensor([[stoi[c] for c in out[-T:]]])
        probs = torch.softmax(model(idx)[0, -1], dim=0)
        p = await probs.tolist_async()
        out.append(chars[random.choices(range(V), weights=p)[0]])
print("".join(out))`;

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const TORCH_EXAMPLES = [
  { id: 'mlp', title: 'Train a small MLP with Adam: loss.backward() (torch)', cells: [MLP_DATA, MLP_MODEL, MLP_TRAIN, MLP_EVAL] },
  { id: 'char-gpt', title: 'Train a tiny character-level GPT, then sample from it (torch)', cells: [CHAR_DATA, CHAR_MODEL, CHAR_TRAIN, CHAR_SAMPLE] },
];

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const COMPILE_EXAMPLES = [
  { id: 'torch-compile', title: 'torch.compile a training step: prepared steps, live loss', cells: [COMPILE_SETUP, COMPILE_TRAIN, COMPILE_EVAL] },
];
