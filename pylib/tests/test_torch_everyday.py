"""Everyday PyTorch code that used to stop, each against real PyTorch (CPU): 0-dim tensors
with dim=0/-1, device=/memory_format=/dims= keywords, negative list and tensor indices, 1-D
input of F.linear, numpy's keepdims=, torch.cuda.is_available(), cat's skipped 1-D empty
tensors, norm p=-inf and p=0, tril/triu, max_pool2d with return_indices."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gpulab.torch as gt
import pytest
import torch

X = [[[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], [[0.5, 7.0, -1.5], [2.0, -3.0, 9.0]]]


def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    ours, ref = fn(gt), fn(torch)
    ours_l = ours.tolist() if isinstance(ours, gt.Tensor) else ours
    ref_l = ref.tolist() if isinstance(ref, torch.Tensor) else ref
    if isinstance(ref, torch.Tensor):
        assert tuple(ours.shape) == tuple(ref.shape)
        assert str(ours.dtype).replace("gpulab.", "") == str(ref.dtype)
    return ours_l, ref_l


CASES: dict[str, Callable[[Any], Any]] = {
    "squeeze_0dim_dim0": lambda T: T.tensor(2.5).squeeze(0),
    "squeeze_0dim_dim-1": lambda T: T.tensor(2.5).squeeze(-1),
    "squeeze_0dim_dims": lambda T: T.tensor(2.5).squeeze((-1,)),
    "transpose_0dim": lambda T: T.tensor(2.5).transpose(0, -1),
    "gather_0dim": lambda T: T.tensor(2.5).gather(0, T.tensor([0, 0])),
    "gather_0dim_0dim_index": lambda T: T.tensor(2.5).gather(-1, T.tensor(0)),
    "argmax_0dim": lambda T: T.tensor(2.5).argmax(0),
    "softmax_0dim": lambda T: T.tensor(2.5).softmax(-1),
    "linspace_device": lambda T: T.linspace(-1, 2, 7, device="cpu"),
    "linspace_tensor_ends": lambda T: T.linspace(T.tensor(0.1), T.tensor(1.0), 5),
    "linspace_int": lambda T: T.linspace(-3, 8, 6, dtype=T.int64),
    "eye_device": lambda T: T.eye(3, 4, device="cpu"),
    "zeros_like_device": lambda T: T.zeros_like(T.tensor(X), device="cpu"),
    "ones_like_dtype": lambda T: T.ones_like(T.tensor(X), dtype=T.int64, device="cpu"),
    "full_like_device": lambda T: T.full_like(T.tensor(X), 7.5, device="cpu"),
    "float_memory_format": lambda T: T.tensor([1, 2]).float(memory_format=T.preserve_format),
    "long_memory_format": lambda T: T.tensor(X).long(memory_format=T.preserve_format),
    "flip_dims_keyword": lambda T: T.flip(T.tensor(X), dims=(0, 2)),
    "flip_method_dims_keyword": lambda T: T.tensor(X).flip(dims=[-1]),
    "index_list_negative": lambda T: T.tensor(X)[:, [-1], :],
    "index_list_negative_first": lambda T: T.tensor(X)[[-1, 0]],
    "index_tensor_negative": lambda T: T.tensor(X)[:, :, T.tensor([-1, -3, 1])],
    "linear_1d_input": lambda T: T.nn.functional.linear(
        T.tensor([1.0, 2.0, 3.0]), T.tensor(X[0]), T.tensor([0.5, -0.5])
    ),
    "sum_keepdims": lambda T: T.tensor(X).sum(1, keepdims=True),
    "amax_keepdims": lambda T: T.amax(T.tensor(X), -1, keepdims=True),
    "cuda_is_available": lambda T: T.cuda.is_available(),
    "cat_skips_empty_1d": lambda T: T.cat([T.tensor([]), T.tensor(X[0])], 1),
    "norm_minus_inf": lambda T: T.tensor(X).norm(-float("inf"), 1),
    "norm_zero": lambda T: T.tensor([[0.0, 2.0], [0.0, 0.0]]).norm(0, -1, keepdim=True),
    "tril": lambda T: T.tril(T.arange(20.0).reshape(4, 5)),
    "tril_batched_k1": lambda T: T.tensor(X).tril(1),
    "tril_k_minus2": lambda T: T.arange(20.0).reshape(4, 5).tril(-2),
    "tril_k_past_the_matrix": lambda T: T.arange(6.0).reshape(2, 3).tril(-7),
    "triu": lambda T: T.triu(T.arange(20.0).reshape(4, 5)),
    "triu_k2_int": lambda T: T.arange(20).reshape(4, 5).triu(2),
    "triu_k_minus1_bool": lambda T: (T.arange(12).reshape(3, 4) > 4).triu(-1),
    "triu_causal_mask": lambda T: T.triu(T.full((4, 4), float("-inf")), diagonal=1),
}

# max_pool2d(return_indices=True): (kernel, stride, padding, dilation, ceil_mode)
POOLS = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    ((2, 3), (1, 2), (1, 0), 1, True),
    (2, 1, 0, 2, False),
    (3, 2, 1, 1, True),
]


@pytest.fixture(autouse=True)
def cpu_python() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


@pytest.mark.parametrize("case", sorted(CASES))
def test_everyday_call_matches_torch(case: str) -> None:
    ours, ref = _both(CASES[case])
    if isinstance(ref, bool):
        assert ours is ref
    else:
        torch.testing.assert_close(torch.tensor(ours), torch.tensor(ref), rtol=1e-6, atol=1e-6)


def test_negative_index_gradient_matches_torch() -> None:
    """x[:, [-1], :] scatters its gradient back to the last row, as torch."""
    ours_x, ref_x = gt.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (ours_x[:, [-1], :] * 3).sum().backward()
    (ref_x[:, [-1], :] * 3).sum().backward()
    assert ours_x.grad.tolist() == ref_x.grad.tolist()


def test_out_of_range_index_is_refused() -> None:
    """-3 on an axis of 2 is still out of range after wrapping: an error, never a value."""
    with pytest.raises(Exception, match="out of range"):
        gt.tensor(X)[:, [-3], :].tolist()


def test_tril_and_triu_gradients_match_torch() -> None:
    ours_x, ref_x = gt.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (ours_x.tril(-1) * 2 + ours_x.triu(1) * 3).sum().backward()
    (ref_x.tril(-1) * 2 + ref_x.triu(1) * 3).sum().backward()
    assert ours_x.grad.tolist() == ref_x.grad.tolist()


def test_tril_of_a_vector_is_an_error_as_in_torch() -> None:
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        gt.tensor([1.0, 2.0]).tril()


@pytest.mark.parametrize("pool", POOLS, ids=str)
def test_max_pool2d_return_indices_matches_torch(pool: tuple) -> None:
    """Values and torch's flat h * W + w indices (int64), through F.max_pool2d and the module;
    the input has ties, so the first maximum of a window must win as in torch."""
    kernel, stride, padding, dilation, ceil_mode = pool
    data = (torch.arange(2 * 3 * 7 * 6) % 11).float().reshape(2, 3, 7, 6).tolist()

    def run(T: Any) -> tuple[Any, Any]:
        x = T.tensor(data)
        direct = T.nn.functional.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, True)
        module = T.nn.MaxPool2d(kernel, stride, padding, dilation, True, ceil_mode)(x)
        assert module[1].tolist() == direct[1].tolist()
        return direct

    (ours_v, ours_i), (ref_v, ref_i) = run(gt), run(torch)
    assert ours_i.dtype == gt.int64 and tuple(ours_i.shape) == tuple(ref_i.shape)
    assert ours_v.tolist() == ref_v.tolist()
    assert ours_i.tolist() == ref_i.tolist()


def test_a_failed_read_does_not_fail_the_reads_after_it() -> None:
    """A tensor whose read failed (an index out of range) stays referenced, as a notebook
    variable or a traceback keeps it: later reads of other tensors still work, and it still
    fails when read again."""
    bad = gt.tensor(X)[:, [-3], :]
    with pytest.raises(Exception, match="out of range"):
        bad.tolist()
    assert gt.tensor(X).sum().item() == pytest.approx(torch.tensor(X).sum().item())
    assert (gt.tensor(X) * 2).tolist() == (torch.tensor(X) * 2).tolist()
    with pytest.raises(Exception, match="out of range"):
        bad.tolist()


def _containers(T: Any) -> Any:
    """A model holding its layers in ModuleDict / ModuleList / ParameterDict / ParameterList,
    with one Linear registered twice (tied), as everyday PyTorch code does."""

    class Net(T.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            shared = T.nn.Linear(3, 3)
            self.heads = T.nn.ModuleDict({"a": shared, "b": T.nn.Linear(3, 2)})
            self.heads["c"] = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.ReLU())
            self.blocks = T.nn.ModuleList([shared])
            self.scales = T.nn.ParameterDict({"s": T.nn.Parameter(T.ones(3))})
            self.biases = T.nn.ParameterList([T.zeros(2), T.nn.Parameter(T.ones(2))])

        def forward(self, x: Any) -> Any:
            h = self.blocks[0](x) * self.scales["s"]
            for name in ("a", "c"):
                h = self.heads[name](h)
            return self.heads["b"](h) + self.biases[0] + self.biases[1]

    return Net()


def test_module_and_parameter_containers_register_as_torch_does() -> None:
    ours, ref = _containers(gt), _containers(torch)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert list(ours.heads) == list(ref.heads) == ["a", "b", "c"]
    assert (
        "c" in ours.heads and len(ours.biases) == 2 and isinstance(ours.biases[0], gt.nn.Parameter)
    )
    ours.load_state_dict({k: v.tolist() for k, v in ref.state_dict().items()})
    x = [[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]]
    ours_out, ref_out = ours(gt.tensor(x)), ref(torch.tensor(x))
    torch.testing.assert_close(torch.tensor(ours_out.tolist()), ref_out.detach())
    ours_out.sum().backward()
    ref_out.sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        torch.testing.assert_close(torch.tensor(p.grad.tolist()), q.grad, msg=name)
