// The PyTorch examples: the MLP trained the PyTorch way (`import torch` is gpulab.torch in the
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

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const TORCH_EXAMPLES = [
  { id: 'mlp', title: 'Train a small MLP with Adam: loss.backward() (torch)', cells: [MLP_DATA, MLP_MODEL, MLP_TRAIN, MLP_EVAL] },
];

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const COMPILE_EXAMPLES = [
  { id: 'torch-compile', title: 'torch.compile a training step: prepared steps, live loss', cells: [COMPILE_SETUP, COMPILE_TRAIN, COMPILE_EVAL] },
];
