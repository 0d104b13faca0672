"""gpulab.functional's composites against PyTorch's own layers (CPU), on cpu-python."""

from __future__ import annotations

import numpy as np
import pytest
import torch  # a test dependency (pyproject [test]): the oracle
from gpulab import Graph
from gpulab import functional as F

TF = torch.nn.functional


def _np(out: dict) -> np.ndarray:
    return np.array(out["data"], dtype=np.float32).reshape(out["shape"])


def linear64(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's linear in float64: the oracle of a float32 product, whose summation order (and
    so its last bits) is each BLAS's own choice."""
    d = torch.float64
    return TF.linear(
        torch.tensor(x, dtype=d), torch.tensor(w, dtype=d), torch.tensor(b, dtype=d)
    ).numpy()


def test_composites_match_torch() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    lw, lb = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    q = rng.standard_normal((2, 4, 3, 8)).astype(np.float32)
    keep = np.array([[1, 1, 0]] * 3, dtype=bool)
    g = Graph()
    X, W, B, Q = (g.tensor(v.tolist()) for v in (x, w, b, q))
    idx = [[0, 2], [1, 1]]
    out = g.run(
        backend="cpu-python",
        lin=F.linear(X, W, B),
        ln=F.layer_norm(X, g.tensor(lw.tolist()), g.tensor(lb.tolist())),
        att=F.attention(Q, Q, Q, g.tensor(keep.tolist(), dtype="bool")),
        emb=F.embedding(g.tensor(idx, dtype="int32"), W),
        nrm=F.l2_normalize(X),
        mse=F.mse_loss(X, X * 2.0),
        fl=F.flatten(Q, 1, 2),
        uq=F.unsqueeze(X, -1),
        sq=F.squeeze(F.unsqueeze(X, 0)),
        bt=F.broadcast_to(B, [3, 5]),
    )["outputs"]
    t = torch.tensor
    np.testing.assert_allclose(_np(out["lin"]), linear64(x, w, b), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(
        _np(out["ln"]), TF.layer_norm(t(x), (8,), t(lw), t(lb)).numpy(), rtol=1e-5, atol=1e-6
    )
    ref = TF.scaled_dot_product_attention(t(q), t(q), t(q), attn_mask=t(keep)).numpy()
    np.testing.assert_allclose(_np(out["att"]), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_np(out["emb"]), w[np.array(idx)])
    np.testing.assert_allclose(_np(out["nrm"]), TF.normalize(t(x), dim=-1).numpy(), atol=1e-7)
    np.testing.assert_allclose(_np(out["mse"]), TF.mse_loss(t(x), t(2 * x)).numpy(), rtol=1e-6)
    assert out["fl"]["shape"] == [2, 12, 8] and out["uq"]["shape"] == [2, 3, 8, 1]
    assert out["sq"]["shape"] == [2, 3, 8]
    np.testing.assert_array_equal(_np(out["bt"]), np.broadcast_to(b, (3, 5)))


def test_bad_axis_names_the_shape() -> None:
    g = Graph()
    with pytest.raises(Exception, match=r"axis 5 is out of range for shape \[2, 3\]"):
        F.flatten(g.full([2, 3], 1.0), 5)


def test_masked_mean_is_sentence_transformers_pooling() -> None:
    """masked_mean: mean over the kept tokens, a row with none gives zeros (clamp 1e-9); linear_t
    (the weight given as [in, out]) is torch's linear."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], np.float32)
    g = Graph()
    out = g.run(backend="cpu-python", m=F.masked_mean(g.tensor(x), g.tensor(mask)))["outputs"]
    tx, tm = torch.tensor(x), torch.tensor(mask).unsqueeze(-1)
    ref = (tx * tm).sum(1) / torch.clamp(tm.sum(1), min=1e-9)
    np.testing.assert_allclose(_np(out["m"]), ref.numpy(), rtol=1e-6, atol=1e-7)
    w, b = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    out = g.run(backend="cpu-python", y=F.linear_t(g.tensor(x), g.tensor(w.T.copy()), g.tensor(b)))
    np.testing.assert_allclose(_np(out["outputs"]["y"]), linear64(x, w, b), rtol=2e-6, atol=2e-6)


def test_torch_backend_composites_match_torch() -> None:
    """The torch.compile backend's composites: erf, tanh-gelu and its gradient, layer norm with
    its saved mean/rstd, nll_loss and its gradient (ignore_index rows left out)."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(60) * 3, [0.0, 1e-4, -5e-4, 9.0, -30.0]])
    x = x.astype(np.float32)
    logits = rng.standard_normal((5, 4)).astype(np.float32)
    target = np.array([1, 3, -100, 0, 3], dtype=np.int32)
    t = torch.tensor(x, requires_grad=True)
    g = Graph()
    X = g.tensor(x)
    logp = g.tensor(logits).log_softmax(axis=-1)
    loss, total = F.nll_loss(logp, g.tensor(target, dtype="int32"))
    y, mu, rstd = F.layer_norm_stats(g.tensor(logits), None, None, 1e-5)
    out = g.run(
        backend="cpu-python",
        erf=F.erf(X),
        gt=F.gelu_tanh(X),
        gtg=F.gelu_tanh_grad(X, X * 0.0 + 1),
        loss=loss,
        total=total,
        y=y,
        mu=mu,
        rstd=rstd,
        dlogp=F.nll_loss_grad(g.full([], 1.0), logp, g.tensor(target, dtype="int32"), total),
    )["outputs"]
    np.testing.assert_allclose(_np(out["erf"]), torch.erf(t).detach().numpy(), atol=2e-7)
    gt = TF.gelu(t, approximate="tanh")
    np.testing.assert_allclose(_np(out["gt"]), gt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (grad,) = torch.autograd.grad(gt.sum(), t)
    np.testing.assert_allclose(_np(out["gtg"]), grad.numpy(), rtol=1e-5, atol=1e-6)
    ref_y, ref_mu, ref_rstd = torch.native_layer_norm(torch.tensor(logits), [4], None, None, 1e-5)
    for key, ref in (("y", ref_y), ("mu", ref_mu), ("rstd", ref_rstd)):
        np.testing.assert_allclose(_np(out[key]), ref.numpy(), rtol=1e-5, atol=1e-6)
    tl = torch.tensor(logits, requires_grad=True)
    lp = torch.log_softmax(tl, -1)
    ref_loss = TF.nll_loss(lp, torch.tensor(target, dtype=torch.int64))
    (dlogp,) = torch.autograd.grad(ref_loss, lp)
    np.testing.assert_allclose(_np(out["loss"]), ref_loss.detach().numpy(), rtol=1e-6)
    assert float(_np(out["total"])) == 4.0
    np.testing.assert_allclose(_np(out["dlogp"]), dlogp.numpy(), rtol=1e-6)
