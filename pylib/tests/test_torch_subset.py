"""gpulab.torch's op surface against real PyTorch (CPU) on cpu-python: values, dtypes and
shapes of every op of the subset, gradients through them, autograd semantics (accumulation,
retain_graph, no_grad, detach), modules and optimizer state, and the refusals by name."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import gpulab.torch as gt
import pytest
import torch

A = [[0.5, -1.25, 2.0, 0.0], [3.5, -0.75, -2.5, 1.5], [1.0, 0.25, -3.0, 2.25]]
B = [[1.5, 0.5, -1.0, 2.0], [-0.5, 1.0, 0.75, -1.5], [2.5, -2.0, 0.5, 1.0]]
IDX = [2, 0, 1, 0]

# name -> f(T, a, b, idx): the same torch code for both modules (a, b float [3, 4])
OPS: dict[str, Callable[..., Any]] = {
    "add_broadcast": lambda T, a, b, i: a + b[0],
    "sub_scalar": lambda T, a, b, i: 2.0 - a,
    "mul": lambda T, a, b, i: a * b,
    "div": lambda T, a, b, i: a / (b.abs() + 1.0),
    "matmul": lambda T, a, b, i: a @ b.T,
    "matvec": lambda T, a, b, i: a @ b[0],
    "pow": lambda T, a, b, i: a**3,
    "rpow": lambda T, a, b, i: 2.0**a,
    "relu": lambda T, a, b, i: a.relu(),
    "gelu": lambda T, a, b, i: T.nn.functional.gelu(a),
    "gelu_tanh": lambda T, a, b, i: T.nn.functional.gelu(a, approximate="tanh"),
    "sigmoid": lambda T, a, b, i: T.sigmoid(a),
    "tanh": lambda T, a, b, i: a.tanh(),
    "exp": lambda T, a, b, i: T.exp(a),
    "log": lambda T, a, b, i: (a.abs() + 0.5).log(),
    "neg": lambda T, a, b, i: -a,
    "sqrt": lambda T, a, b, i: (a.abs() + 0.1).sqrt(),
    "abs": lambda T, a, b, i: T.abs(a),
    "clamp": lambda T, a, b, i: a.clamp(-1.0, 1.0),
    "clamp_min": lambda T, a, b, i: T.clamp(a, min=0.1),
    "maximum": lambda T, a, b, i: T.maximum(a, b),
    "minimum": lambda T, a, b, i: a.minimum(b),
    "softmax": lambda T, a, b, i: a.softmax(dim=1),
    "softmax0": lambda T, a, b, i: T.softmax(a, dim=0),
    "log_softmax": lambda T, a, b, i: a.log_softmax(-1),
    "sum": lambda T, a, b, i: a.sum(),
    "sum_dim": lambda T, a, b, i: a.sum(dim=0),
    "sum_keep": lambda T, a, b, i: a.sum(1, keepdim=True),
    "sum_dims": lambda T, a, b, i: a.reshape(3, 2, 2).sum(dim=(0, 2)),
    "mean": lambda T, a, b, i: a.mean(),
    "mean_dim": lambda T, a, b, i: a.mean(dim=-1, keepdim=True),
    "var": lambda T, a, b, i: a.var(),
    "var_dim": lambda T, a, b, i: a.var(dim=1, unbiased=False, keepdim=True),
    "std_dims": lambda T, a, b, i: T.std(a.reshape(3, 2, 2), dim=(0, 2)),
    "norm": lambda T, a, b, i: a.norm(),
    "norm_dim": lambda T, a, b, i: T.norm(a, dim=1),
    "max": lambda T, a, b, i: a.max(),
    "max_dim_values": lambda T, a, b, i: a.max(dim=1).values,
    "max_dim_indices": lambda T, a, b, i: a.max(1)[1],
    "min_dim": lambda T, a, b, i: a.min(dim=0, keepdim=True)[0],
    "argmax": lambda T, a, b, i: a.argmax(),
    "argmax_dim": lambda T, a, b, i: a.argmax(dim=1),
    "argmin_keep": lambda T, a, b, i: a.argmin(dim=0, keepdim=True),
    "transpose": lambda T, a, b, i: a.transpose(0, 1),
    "permute": lambda T, a, b, i: a.reshape(3, 2, 2).permute(2, 0, 1),
    "reshape": lambda T, a, b, i: a.reshape(2, -1),
    "view": lambda T, a, b, i: a.view(4, 3),
    "flatten": lambda T, a, b, i: a.reshape(3, 2, 2).flatten(1),
    "unsqueeze": lambda T, a, b, i: a.unsqueeze(1),
    "squeeze": lambda T, a, b, i: a.unsqueeze(0).squeeze(0),
    "squeeze_all": lambda T, a, b, i: a[:1].unsqueeze(-1).squeeze(),
    "t": lambda T, a, b, i: a.t(),
    "expand": lambda T, a, b, i: a[0:1].expand(3, 4),
    "gt": lambda T, a, b, i: a > b,
    "le_scalar": lambda T, a, b, i: a <= 0.5,
    "eq": lambda T, a, b, i: a == b,
    "ne": lambda T, a, b, i: a != 0.0,
    "where": lambda T, a, b, i: T.where(a > 0, a, b),
    "where_scalar": lambda T, a, b, i: T.where(a > 0, a, 0.0),
    "masked_fill": lambda T, a, b, i: a.masked_fill(b < 0, -9.0),
    "and": lambda T, a, b, i: (a > 0) & (b > 0),
    "not": lambda T, a, b, i: ~(a > 0),
    "index": lambda T, a, b, i: a[1],
    "index_slice": lambda T, a, b, i: a[1:, ::2],
    "index_neg": lambda T, a, b, i: a[..., -1],
    "index_none": lambda T, a, b, i: a[None, 0],
    "index_tensor": lambda T, a, b, i: a[i[:2]],
    "narrow": lambda T, a, b, i: a.narrow(1, 1, 2),
    "select": lambda T, a, b, i: a.select(0, -1),
    "split": lambda T, a, b, i: a.split(3, dim=1)[1],
    "split_sizes": lambda T, a, b, i: T.split(a, [1, 2], 0)[1],
    "chunk": lambda T, a, b, i: a.chunk(2, dim=1)[0],
    "flip": lambda T, a, b, i: a.flip(0, 1),
    "cat": lambda T, a, b, i: T.cat([a, b], dim=1),
    "cat_many": lambda T, a, b, i: T.cat([a] * 9, dim=0),
    "stack": lambda T, a, b, i: T.stack([a, b], dim=1),
    "index_select": lambda T, a, b, i: a.index_select(1, i),
    "gather": lambda T, a, b, i: a.gather(1, i[:3].reshape(3, 1)),
    "int_arith": lambda T, a, b, i: i * 3 + 1 - i,
    "int_sum": lambda T, a, b, i: (a > 0).sum(),
    "int_float": lambda T, a, b, i: i.float() / 2,
    "int_compare": lambda T, a, b, i: i == 0,
    "int_max": lambda T, a, b, i: i.max(),
    "accuracy": lambda T, a, b, i: (a.argmax(1) == i[:3]).float().mean(),
    "arange": lambda T, a, b, i: T.arange(5) * 2,
    "arange_float": lambda T, a, b, i: T.arange(0.0, 1.0, 0.25),
    "zeros_ones": lambda T, a, b, i: T.zeros(2, 3) + T.ones(3),
    "full": lambda T, a, b, i: T.full((2, 2), 7.0),
    "linear": lambda T, a, b, i: T.nn.functional.linear(a, b, b[0, :3]),
    "layer_norm": lambda T, a, b, i: T.nn.functional.layer_norm(a, (4,), b[0], b[1]),
    "embedding": lambda T, a, b, i: T.nn.functional.embedding(i.reshape(2, 2), a),
    "ce_index": lambda T, a, b, i: T.nn.functional.cross_entropy(a, i[:3]),
    "ce_none": lambda T, a, b, i: T.nn.functional.cross_entropy(a, i[:3], reduction="none"),
    "ce_probs": lambda T, a, b, i: T.nn.functional.cross_entropy(a, b.softmax(1)),
    "nll": lambda T, a, b, i: T.nn.functional.nll_loss(a.log_softmax(1), i[:3]),
    "mse": lambda T, a, b, i: T.nn.functional.mse_loss(a, b),
    "mse_sum": lambda T, a, b, i: T.nn.MSELoss(reduction="sum")(a, b),
    "sdpa_causal": lambda T, a, b, i: T.nn.functional.scaled_dot_product_attention(
        a, b, a, is_causal=True
    ),
}
INT_OPS = {
    "int_arith",
    "int_sum",
    "int_compare",
    "int_max",
    "arange",
    "max_dim_indices",
    "argmax",
    "argmax_dim",
    "argmin_keep",
}


@pytest.fixture(autouse=True)
def cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


def _inputs(T: Any) -> tuple[Any, Any, Any]:
    return T.tensor(A), T.tensor(B), T.tensor(IDX)


def test_ops_match_torch() -> None:
    """Every op at once (one graph run fills every pending result): values, shapes, dtypes."""
    ours = {k: f(gt, *_inputs(gt)) for k, f in OPS.items()}
    ref = {k: f(torch, *_inputs(torch)) for k, f in OPS.items()}
    for k, r in ref.items():
        o = ours[k]
        assert tuple(o.shape) == tuple(r.shape), k
        assert o.dtype.name == str(r.dtype).removeprefix("torch."), k
        got, want = o.tolist(), r.tolist()
        if k in INT_OPS or r.dtype == torch.bool:
            assert got == want, k
        else:
            assert _close(got, want), (k, got, want)


def _close(a: Any, b: Any, tol: float = 2e-6) -> bool:
    if isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * (1 + abs(b))


GRAD_OPS = [
    k
    for k in OPS
    if k not in INT_OPS
    and k
    not in {
        "gt",
        "le_scalar",
        "eq",
        "ne",
        "and",
        "not",
        "int_float",
        "accuracy",
        "arange_float",
        "zeros_ones",
        "full",
        "argmax",
        "max_dim_indices",
    }
]


def test_gradients_match_torch() -> None:
    """d(sum(f(a, b) * w)) / d(a, b) for every differentiable op of the table, vs torch."""
    for k in GRAD_OPS:
        grads = []
        for T in (gt, torch):
            a, b, i = _inputs(T)
            a.requires_grad_(True)
            b.requires_grad_(True)
            out = OPS[k](T, a, b, i)
            w = T.arange(out.numel(), dtype=T.float32).reshape(out.shape) * 0.1 - 0.3
            (out * w).sum().backward()
            grads.append([None if t.grad is None else t.grad.tolist() for t in (a, b)])
        ours, ref = grads
        for o, r in zip(ours, ref, strict=True):
            assert (o is None) == (r is None) or _close(o or _zeros(r), r or _zeros(o)), k
            if o is not None and r is not None:
                assert _close(o, r, 1e-5), (k, o, r)


def _zeros(like: Any) -> Any:
    return [_zeros(x) for x in like] if isinstance(like, list) else 0.0


def test_grad_accumulates_and_retain_graph() -> None:
    """.grad sums over backward calls until zero_grad; retain_graph=True allows a second
    backward through the same graph."""
    for T in (gt, torch):
        w = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        loss = (w * w).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        (w * 3.0).sum().backward()
        assert w.grad.tolist() == [7.0, -5.0, 15.0]


def test_intermediate_gradients_like_torch() -> None:
    """retain_grad() on an intermediate result, and autograd.grad with respect to one (two
    forwards: torch's retain_grad hook also fires inside autograd.grad)."""
    out = []
    for T in (gt, torch):
        w = T.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        h = (w @ w).tanh()
        h.retain_grad()
        ((h * h).sum() + w.sum()).backward()
        h2 = (w @ w).tanh()
        (dh,) = T.autograd.grad((h2 * h2).sum(), [h2])
        out.append([h.grad.tolist(), dh.tolist(), w.grad.tolist(), h.retains_grad])
    assert _close(out[0][:3], out[1][:3]) and out[0][3] is out[1][3] is True


def test_no_grad_and_detach_stop_gradients() -> None:
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    with gt.no_grad():
        frozen = w * 10.0
    assert not frozen.requires_grad
    loss = (w * frozen).sum() + (w * (w * 5.0).detach()).sum()
    loss.backward()
    assert w.grad.tolist() == [15.0, 30.0]  # frozen and the detached term are constants
    assert w.is_leaf and not loss.is_leaf and loss.grad_fn is not None


def test_large_record_keeps_gradient_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run in a large record (past RESET_NODES) starts a new record only when no live tensor
    has gradient history there (it did before: the detach() run cut the first term off)."""
    from gpulab.torch import _tape

    monkeypatch.setattr(_tape, "RESET_NODES", 0)
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    first = (w * w).sum()
    loss = first + (w * (w * 5.0).detach()).sum()  # detach() runs the record
    loss.backward()
    assert w.grad.tolist() == [7.0, 14.0]
    before = _tape.current()
    del first, loss
    gt.tensor([1.0]).relu().item()
    assert _tape.current() is not before, "nothing with history left: the record resets"


def test_setitem_like_torch() -> None:
    """t[key] = value for basic keys (a number, a tensor broadcast to the selection), float and
    int64, and gradients through the assigned values."""
    out = []
    for T in (gt, torch):
        t = T.zeros(3, 4)
        t[1] = 5.0
        t[:, 0] = T.tensor([1.0, 2.0, 3.0])
        v = T.tensor([0.5, -2.0], requires_grad=True)
        t[2, 1:3] = v * 7.0
        i = T.zeros(2, 2, dtype=T.long)
        i[0, 1] = 3
        (t * t).sum().backward()
        out.append((t.tolist(), i.tolist(), str(i.dtype), v.grad.tolist()))
    assert out[0][:2] == out[1][:2] and out[0][2].endswith("int64") and out[1][2] == "torch.int64"
    assert _close(out[0][3], out[1][3])


def test_manual_sgd_in_place() -> None:
    """The classic hand-written loop: p -= lr * p.grad under no_grad, p.grad.zero_()."""
    results = []
    for T in (gt, torch):
        w = T.tensor([[0.5, -0.25], [1.0, 0.75]], requires_grad=True)
        x = T.tensor([[1.0, 2.0], [-1.0, 0.5]])
        for _ in range(3):
            loss = ((x @ w).tanh() ** 2).mean()
            loss.backward()
            with T.no_grad():
                w -= 0.5 * w.grad
                w.grad.zero_()
        results.append((w.tolist(), loss.item()))
    assert _close(results[0][0], results[1][0]) and _close(results[0][1], results[1][1])


def test_module_surface() -> None:
    model = gt.nn.Sequential(
        gt.nn.Linear(3, 4), gt.nn.GELU(), gt.nn.Dropout(0.5), gt.nn.Linear(4, 2, bias=False)
    )
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "3.weight"]
    assert [tuple(p.shape) for p in model.parameters()] == [(4, 3), (4,), (2, 4)]
    state = {k: v.tolist() for k, v in model.state_dict().items()}
    other = gt.nn.Sequential(
        gt.nn.Linear(3, 4), gt.nn.GELU(), gt.nn.Dropout(0.5), gt.nn.Linear(4, 2, bias=False)
    )
    other.load_state_dict(state)
    x = gt.tensor([[1.0, 2.0, 3.0]])
    model.eval()
    other.eval()
    assert model(x).tolist() == other(x).tolist()  # eval: dropout is the identity
    assert not model[2].training and model.train().training
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        other.load_state_dict({**state, "0.weight": [[1.0]]})


def test_optimizer_state_like_torch() -> None:
    p = gt.nn.Parameter(gt.tensor([1.0, -1.0]))
    q = gt.nn.Parameter(gt.tensor([2.0]))
    sgd = gt.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)
    adam = gt.optim.AdamW([p, q], lr=0.01)
    for opt in (sgd, adam):
        opt.zero_grad()
        ((p * p).sum() + (q * 3.0).sum()).backward()
        opt.step()
    assert sgd.param_groups[1]["lr"] == 0.5 and sgd.param_groups[0]["momentum"] == 0.9
    assert set(sgd.state[p]) == {"momentum_buffer"}
    assert set(adam.state[q]) == {"step", "exp_avg", "exp_avg_sq"}
    assert adam.state[q]["step"].item() == 1.0 and adam.state[q]["exp_avg"].shape == (1,)


def test_dtypes_and_conventions() -> None:
    assert gt.tensor([1, 2]).dtype is gt.int64 and gt.tensor([1.0]).dtype is gt.float32
    assert gt.tensor([True]).dtype is gt.bool and gt.arange(3).dtype is gt.long
    v, i = gt.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    assert v.tolist() == [5.0, 7.0] and i.tolist() == [1, 0] and i.dtype is gt.int64
    t = gt.tensor([[1.0, 2.0]])
    assert t.size() == (1, 2) and t.size(-1) == 2 and t.dim() == 2 and t.numel() == 2
    assert t.sum().item() == 3.0 and isinstance(t.sum().item(), float)
    assert t.numpy().tolist() == [[1.0, 2.0]] and str(t.numpy().dtype) == "float32"
    with pytest.raises(OverflowError, match="int32"):
        gt.tensor([2**40])


def test_randn_is_our_stream_seeded() -> None:
    a = gt.randn(1000, generator=gt.Generator().manual_seed(3)).tolist()
    b = gt.randn(1000, generator=gt.Generator().manual_seed(3)).tolist()
    gt.manual_seed(3)
    c = gt.randn(1000).tolist()
    assert a == b == c and a != gt.randn(1000).tolist()
    mean = sum(a) / len(a)
    std = math.sqrt(sum((x - mean) ** 2 for x in a) / len(a))
    assert abs(mean) < 0.1 and abs(std - 1.0) < 0.1


# -- refusals: each names what is refused --------------------------------------------------------


def test_rmsprop_refused() -> None:
    with pytest.raises(NotImplementedError, match=r"torch\.optim\.RMSprop"):
        gt.optim.RMSprop([gt.nn.Parameter(gt.tensor([1.0]))])


def test_amsgrad_refused() -> None:
    for cls in (gt.optim.Adam, gt.optim.AdamW):
        with pytest.raises(NotImplementedError, match=r"amsgrad=True"):
            cls([gt.nn.Parameter(gt.tensor([1.0]))], amsgrad=True)


def test_create_graph_refused() -> None:
    w = gt.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"create_graph=True \(higher-order"):
        (w * w).sum().backward(create_graph=True)
    with pytest.raises(NotImplementedError, match=r"create_graph=True"):
        gt.autograd.grad((w * w).sum(), [w], create_graph=True)


def test_second_backward_refused() -> None:
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    h = (w * 2.0).tanh()
    loss = h.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        (h * 3.0).sum().backward()  # shares the freed history


def test_ops_outside_the_subset_refused() -> None:
    t = gt.tensor([1.0, 2.0])
    for call, name in [
        (lambda: gt.fft, "torch.fft"),
        (lambda: t.cumprod(0), "Tensor.cumprod"),
        (lambda: gt.nn.Conv3d, "torch.nn.Conv3d"),
        (lambda: gt.nn.functional.conv1d, "torch.nn.functional.conv1d"),
        (lambda: gt.tensor([1.0], dtype="float64"), "float64"),
        (lambda: t[t > 1.0], "boolean-mask indexing"),
    ]:
        with pytest.raises(NotImplementedError) as err:
            call()
        assert name in str(err.value) and "gpulab.torch does not implement" in str(err.value)
    assert not hasattr(t, "cumprod")


def test_float64_requests_are_refused_by_name() -> None:
    """Every way of asking for float64 (PyTorch's dtype object, a name, ours) raises
    gpulab.torch.Unsupported naming the dtype: never a float32 result under another name
    (`.to(torch.float64)`, `softmax(dtype=)` and `sum(dtype=)` used to return float32)."""
    t = gt.tensor([1.0, 2.0])
    for call in [
        lambda: gt.zeros(2, dtype=torch.float64),
        lambda: gt.tensor([1.0], dtype="float64"),
        lambda: gt.full_like(t, 2.0, dtype=torch.float64),
        lambda: t.to(torch.float64),
        lambda: t.to("cpu", torch.float64),
        lambda: t.to(dtype=torch.float64),
        lambda: t.softmax(0, dtype=torch.float64),
        lambda: t.log_softmax(0, dtype=torch.float64),
        lambda: gt.nn.functional.softmax(t, 0, dtype=torch.float64),
        lambda: t.sum(dtype=torch.float64),
        lambda: t.mean(dtype=torch.float64),
        lambda: gt.float64,
    ]:
        with pytest.raises(gt.Unsupported, match="float64"):
            call()
    # the subset's own dtypes, as PyTorch's dtype objects, still convert
    assert t.to(torch.int64).dtype is gt.int64
    assert t.softmax(0, dtype=torch.float32).tolist() == pytest.approx([0.26894142, 0.7310586])
    assert gt.tensor([1, 2]).sum(dtype=gt.float32).dtype is gt.float32


def test_async_step_matches_sync() -> None:
    """step_async / item_async (the page without JSPI) give what step / item give."""
    import asyncio
    import concurrent.futures

    from torch_fixtures import fixtures as fx

    spec = fx.FIXTURES["mlp_adam_mse"]
    sync = fx.run(spec, gt, steps=2)
    b = fx.build(spec, gt, steps=2)

    async def train() -> list[float]:
        losses = []
        for x, y in b.batches:
            xt, yt = b.tensors(x, y)
            b.optimizer.zero_grad()
            loss = b.loss_fn(b.model(xt), yt)
            first = await loss.item_async()  # a run before the step, as a page would show it
            loss.backward()
            await b.optimizer.step_async()
            losses.append(first)
        return losses

    # a loop of its own in a thread of its own: under pytest-xdist a browser test's Playwright
    # (sync API) may have left this worker's thread marked as running an event loop
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        losses = pool.submit(asyncio.run, train()).result()
    assert losses == [s["loss"] for s in sync]
    assert b.params() == sync[-1]["params"]


def test_records_without_numpy() -> None:
    """Recording a model, its backward and its update imports no numpy (Pyodide has none)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import gpulab.torch as torch\n"
        "m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))\n"
        "loss = torch.nn.functional.cross_entropy(m(torch.randn(5, 3)), torch.tensor([0, 1, 0, 1, 1]))\n"
        "loss.backward()\n"
        "opt = torch.optim.Adam(m.parameters())\n"
        "rec, plans = opt._record()\n"
        "assert len(plans) == 4 and m[0].weight.grad is not None\n"
        "print(rec.graph.to_dict(loss=loss._node)['version'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_clip_grad_like_torch() -> None:
    """nn.utils.clip_grad_norm_ (2 and inf) and clip_grad_value_ against torch."""
    out = []
    for T in (gt, torch):
        w = T.tensor([[3.0, -4.0], [1.0, 2.0]], requires_grad=True)
        b = T.tensor([0.5, -6.0], requires_grad=True)
        norms = []
        for kind in (2.0, math.inf):
            w.grad = b.grad = None
            ((w @ b) ** 2).sum().backward()
            norms.append(T.nn.utils.clip_grad_norm_([w, b], 1.5, norm_type=kind).item())
            norms += w.grad.reshape(-1).tolist() + b.grad.tolist()
        T.nn.utils.clip_grad_value_([w, b], 0.1)
        out.append(norms + w.grad.reshape(-1).tolist())
    assert _close(out[0], out[1], 1e-6)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_conv_and_pooling_like_torch() -> None:
    """nn.Conv2d / MaxPool2d / AvgPool2d and F.conv2d (padding "same", groups) against torch:
    the forward values and the gradients of the input and of every parameter."""
    outs = []
    for T in (gt, torch):
        x = T.tensor(
            [
                [
                    [[((i * 7 + j * 3) % 11) / 5.0 - 1.0 for j in range(6)] for i in range(5)]
                    for _ in range(2)
                ]
            ],
            requires_grad=True,
        )
        conv = T.nn.Conv2d(2, 4, 3, padding=1, stride=(1, 2))
        weight = [
            [[[0.1 * (o + c + a - b) for b in range(3)] for a in range(3)] for c in range(2)]
            for o in range(4)
        ]
        conv.load_state_dict({"weight": T.tensor(weight), "bias": T.tensor([0.5, -0.5, 0.25, 0.0])})
        net = T.nn.Sequential(
            conv,
            T.nn.ReLU(),
            T.nn.MaxPool2d(2, ceil_mode=True),
            T.nn.AvgPool2d(2, stride=1, padding=1),
        )
        w = T.tensor(
            [[[[0.5, -1.0], [0.25, 2.0]]], [[[1.0, 0.0], [0.0, -1.0]]]], requires_grad=True
        )
        y, same = net(x), T.nn.functional.conv2d(x, w, padding="same", groups=2)
        ((y * y).sum() + (same * same).sum()).backward()
        grads = [t.grad.tolist() for t in (x, w, conv.weight, conv.bias)]
        outs.append([y.tolist(), same.tolist(), *grads])
    for got, want in zip(outs[0], outs[1], strict=True):
        assert _close(got, want, 1e-5)


SCHEDULERS = {
    "lambda": lambda S, o: S.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1.0 / (1 + e)]),
    "step": lambda S, o: S.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda S, o: S.ExponentialLR(o, gamma=0.93),
    "cosine": lambda S, o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.001),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_schedulers_give_torch_floats(name: str) -> None:
    """Each scheduler's learning rates over 14 steps are torch's, float for float."""
    seqs = []
    for T in (gt, torch):
        p, q = T.nn.Parameter(T.tensor([1.0])), T.nn.Parameter(T.tensor([2.0]))
        opt = T.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
        sched = SCHEDULERS[name](T.optim.lr_scheduler, opt)
        seq = [sched.get_last_lr()]
        for _ in range(14):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs.append(seq)
    assert seqs[0] == seqs[1]


def test_training_with_a_scheduler_matches_torch() -> None:
    """A fixture trained with StepLR halving lr every 2 steps: parameters as torch's."""
    from torch_fixtures import fixtures as fx

    spec = fx.FIXTURES["mlp_sgd_nesterov_wd"]
    traces = []
    for T in (gt, torch):
        b = fx.build(spec, T)
        sched = T.optim.lr_scheduler.StepLR(b.optimizer, step_size=2, gamma=0.5)
        trace = []
        for x, y in b.batches:
            loss = b.train_step(*b.tensors(x, y))
            sched.step()
            trace.append({"loss": float(loss.item()), "params": b.params()})
        traces.append(trace)
    assert fx.compare(*traces) == []


def test_resampling_like_torch() -> None:
    """F.interpolate (nearest, bilinear with and without align_corners, scale_factor),
    nn.Upsample and nn.AdaptiveAvgPool2d against torch, values and input gradients."""
    outs = []
    for T in (gt, torch):
        x = T.tensor(
            [[[[((i * 5 + j * 3) % 7) / 3.0 - 1.0 for j in range(4)] for i in range(4)]]],
            requires_grad=True,
        )
        F = T.nn.functional
        ys = [
            F.interpolate(x, size=(6, 5)),
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(3, 7), mode="bilinear", align_corners=True),
            T.nn.Upsample(scale_factor=2)(x),
            T.nn.AdaptiveAvgPool2d((2, 1))(x),
        ]
        sum((y * y).sum() for y in ys).backward()
        outs.append([y.tolist() for y in ys] + [x.grad.tolist()])
    assert _close(outs[0], outs[1], 1e-5)
