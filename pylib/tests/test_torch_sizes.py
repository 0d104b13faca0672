"""gpulab.torch's factories against hostile sizes: a bad size raises what PyTorch raises (the
same exception type, checked against the real torch here; the message too where it is
PyTorch's), and a size past the protocol's element limit is refused (LIMIT) before anything is
allocated. The huge ones run in a memory-capped child (hostile.bounded), so a regression fails
with MemoryError instead of exhausting the machine."""

from __future__ import annotations

import gpulab.torch as gt
import pytest
import torch
from gpulab import optable
from gpulab.errors import GpuLabError
from hostile.bounded import run_bounded

# (call, args): each refused by torch for its size
BAD_SIZES = [
    ("zeros", (-1,)),
    ("zeros", (2.5,)),
    ("zeros", ("3",)),
    ("zeros", ([2, -3],)),
    ("zeros", ((2, "a"),)),
    ("zeros", (None,)),
    ("zeros", (True,)),
    ("zeros", (2**63,)),
    ("ones", (2, 2.0)),
    ("ones", (-4,)),
    ("empty", (-1,)),
    ("full", ((-1,), 1.0)),
    ("full", (2.5, 1.0)),
    ("full", (3, 1.0)),
    ("randn", (-2,)),
    ("randn", (2, "x")),
    ("rand", (2.5,)),
    ("randint", (0, 5, (-1,))),
    ("randint", (0, 5, 3)),
    ("randint", (5, 0, (2,))),
    ("arange", (0, 10, 0)),
    ("arange", (0, float("inf"))),
    ("arange", (0, float("nan"))),
    ("arange", (10, 0)),
    ("eye", (-1,)),
    ("eye", (2.5,)),
    ("eye", (3, -2)),
    ("linspace", (0, 1, -1)),
    ("linspace", (0, 1, 2.5)),
]


def _raised(fn) -> BaseException:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return exc
    raise AssertionError("nothing was raised")


@pytest.mark.parametrize(("name", "args"), BAD_SIZES, ids=[f"{n}{a}" for n, a in BAD_SIZES])
def test_bad_sizes_raise_what_torch_raises(name: str, args: tuple) -> None:
    theirs = _raised(lambda: getattr(torch, name)(*args))
    ours = _raised(lambda: getattr(gt, name)(*args))
    assert type(ours) is type(theirs), f"ours {ours!r}, torch {theirs!r}"
    if not str(theirs).startswith(f"{name}() received an invalid combination"):
        # torch's own sentence (its argument parser's overload listing is left out)
        assert str(ours).splitlines()[0] == str(theirs).splitlines()[0]


@pytest.mark.parametrize(
    ("in_features", "out_features"), [(-1, 2), (2.5, 2), (2, -3)], ids=["-1", "2.5", "out-3"]
)
def test_linear_of_a_bad_size_raises_what_torch_raises(in_features, out_features) -> None:
    theirs = _raised(lambda: torch.nn.Linear(in_features, out_features))
    ours = _raised(lambda: gt.nn.Linear(in_features, out_features))
    assert type(ours) is type(theirs), f"ours {ours!r}, torch {theirs!r}"
    assert str(ours) == str(theirs)


HUGE = {
    "randn(10**12)": lambda: gt.randn(10**12),
    "rand(10**6, 10**6)": lambda: gt.rand(10**6, 10**6),
    "zeros(2**40, 2**40)": lambda: gt.zeros(2**40, 2**40),
    "ones(10**12)": lambda: gt.ones(10**12),
    "empty(10**10)": lambda: gt.empty(10**10),
    "full((10**12,), 1.0)": lambda: gt.full((10**12,), 1.0),
    "randint(0, 5, (10**12,))": lambda: gt.randint(0, 5, (10**12,)),
    "arange(2**40)": lambda: gt.arange(2**40),
    "linspace(0, 1, 10**10)": lambda: gt.linspace(0, 1, 10**10),
    "eye(10**6)": lambda: gt.eye(10**6),
    "nn.Linear(10**9, 10**9)": lambda: gt.nn.Linear(10**9, 10**9),
    "nn.Embedding(10**9, 10**3)": lambda: gt.nn.Embedding(10**9, 10**3),
}


@pytest.mark.parametrize("name", list(HUGE))
def test_sizes_past_the_element_limit_are_refused_before_allocating(name: str) -> None:
    outcome = run_bounded(HUGE[name], memory=256 << 20)
    assert outcome.kind == "error" and outcome.code == "LIMIT", str(outcome)
    assert str(optable.limits()["max_elements"]) in outcome.message, outcome.message


def test_sizes_at_the_limit_and_int_like_entries_are_taken() -> None:
    import numpy as np

    assert list(gt.zeros(np.int64(3), 2).shape) == [3, 2]
    assert list(gt.ones(torch.Size([2, 2])).shape) == [2, 2]
    assert list(gt.zeros(()).shape) == []
    assert list(gt.full([2], 7).shape) == [2]
    assert gt.arange(3).tolist() == [0, 1, 2]
    assert gt.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    with pytest.raises(GpuLabError) as info:
        gt.zeros(optable.limits()["max_elements"] + 1)
    assert info.value.code == "LIMIT"
