"""The ONNX attribute fuzz lane: for every operator of gpulab.onnx's table (hostile.onnx_seeds,
one valid model per operator and per opset where an attribute became an input), hypothesis
gives the node's attributes values of the wrong type, size, sign and range (built with
onnx.helper), and the operands read at load (initializers: shapes, axes, counts) hostile
values; the load must end in a model or a GpuLabError (VALIDATION, LIMIT or UNSUPPORTED)
naming the node or a tensor, never in another exception.

Each seed's examples run in a memory-capped child (hostile.bounded): a lowering that would
allocate without bound fails the lane instead of the machine. Example counts: hostile.fuzz
(GPULAB_FUZZ_EXAMPLES raises them)."""

from __future__ import annotations

import math

import gpulab.onnx as gonnx
import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.onnx.ops import OPS
from hostile.bounded import run_bounded
from hostile.fuzz import fuzz_settings, watchdog_seconds
from hostile.onnx_seeds import SEEDS, Seed
from hypothesis import given
from hypothesis import strategies as st
from onnx import AttributeProto, TensorProto, helper

REFUSALS = ("VALIDATION", "LIMIT", "UNSUPPORTED")
EXAMPLES = 6  # per seed and lane in `make test` (157 seeds)

EDGE_INTS = [0, 1, -1, 2, 3, -2, 7, 2**31 - 1, -(2**31), 2**31, 2**40, 2**62, 2**63 - 1, -(2**63)]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, math.nan, math.inf, -math.inf, 1e30, -1e30, 1e-30]
WORDS = [
    "",
    "x",
    "NOTSET",
    "SAME_UPPER",
    "SAME_LOWER",
    "VALID",
    "constant",
    "reflect",
    "nearest",
    "linear",
    "cubic",
    "tanh",
    "none",
    "mean",
    "sum",
    "DCR",
    "CRD",
    "ij,jk->ik",
    "->",
    "ii->i",
    "...",
    "a" * 300,
]

ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-8, 8))
floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(-8, 8, width=32))
texts = st.one_of(st.sampled_from(WORDS), st.text(max_size=8))


@st.composite
def tensors(draw) -> TensorProto:
    kind = draw(
        st.sampled_from(
            [
                TensorProto.FLOAT,
                TensorProto.INT64,
                TensorProto.INT32,
                TensorProto.BOOL,
                TensorProto.DOUBLE,
            ]
        )
    )
    dims = draw(st.sampled_from([[], [1], [2], [1, 1], [0], [3, 2]]))
    n = math.prod(dims)
    if kind in (TensorProto.FLOAT, TensorProto.DOUBLE):
        values = draw(st.lists(floats, min_size=n, max_size=n))
    elif kind == TensorProto.BOOL:
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    else:
        low, high = (-(2**31), 2**31 - 1) if kind == TensorProto.INT32 else (-(2**63), 2**63 - 1)
        values = draw(st.lists(st.integers(low, high), min_size=n, max_size=n))
    return helper.make_tensor("t", kind, dims, values)


def attribute(name: str) -> st.SearchStrategy[AttributeProto]:
    """Any attribute type, with edge values: most are the wrong type for `name`."""
    empty = st.sampled_from([AttributeProto.INTS, AttributeProto.FLOATS, AttributeProto.STRINGS])
    return st.one_of(
        ints.map(lambda v: helper.make_attribute(name, v)),
        floats.map(lambda v: helper.make_attribute(name, v)),
        texts.map(lambda v: helper.make_attribute(name, v)),
        st.just(helper.make_attribute(name, b"\xff\xfe")),  # not UTF-8
        st.lists(ints, min_size=1, max_size=9).map(lambda v: helper.make_attribute(name, v)),
        st.lists(floats, min_size=1, max_size=9).map(lambda v: helper.make_attribute(name, v)),
        st.lists(texts, min_size=1, max_size=3).map(lambda v: helper.make_attribute(name, v)),
        empty.map(lambda kind: helper.make_attribute(name, [], attr_type=kind)),
        tensors().map(lambda t: helper.make_attribute(name, t)),
    )


@st.composite
def load_time_values(draw, like: np.ndarray) -> np.ndarray:
    """A hostile replacement for an operand read at load: edge values, another length or
    rank, another element type."""
    length = draw(st.sampled_from([0, 1, 2, len(like.reshape(-1)), 5, 9]))
    kind = draw(st.sampled_from(["same", "int64", "float32", "bool", "int32"]))
    dtype = {
        "same": like.dtype,
        "int64": np.int64,
        "float32": np.float32,
        "bool": np.bool_,
        "int32": np.int32,
    }[kind]
    if np.issubdtype(dtype, np.floating):
        values = draw(st.lists(floats, min_size=length, max_size=length))
    elif dtype == np.bool_:
        values = draw(st.lists(st.booleans(), min_size=length, max_size=length))
    else:
        info = np.iinfo(dtype)
        edge = st.sampled_from([v for v in EDGE_INTS if info.min <= v <= info.max])
        values = draw(
            st.lists(st.one_of(edge, st.integers(-8, 8)), min_size=length, max_size=length)
        )
    arr = np.asarray(values, dtype=dtype)
    if length == 4 and draw(st.booleans()):
        arr = arr.reshape(2, 2)
    if length == 1 and draw(st.booleans()):
        arr = arr.reshape(())
    return arr


def _check_load(raw: bytes, names: list[str]) -> None:
    """The load ends in a model or a refusal naming the node or one of the model's tensors."""
    try:
        gonnx.load(raw)
    except GpuLabError as err:
        assert err.code in REFUSALS, f"{err.code}: {err.message}"
        assert err.message.startswith("onnx:"), err.message
        assert any(n in err.message for n in names), f"names no culprit: {err.message}"


def _culprits(seed: Seed) -> list[str]:
    return ["node 0", *(n for n in seed.input_names() if n), "out0", "out1", "initializer"]


def _fuzz_attributes(seed: Seed) -> None:
    names = sorted(OPS[seed.op].attrs) + ["no_such_attribute"]

    @fuzz_settings(EXAMPLES)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        attrs: dict = dict(seed.attrs)
        for name in data.draw(
            st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
        ):
            attrs[name] = data.draw(attribute(name), label=name)
        _check_load(seed.model(attrs=attrs), _culprits(seed))

    run()


def _fuzz_load_time_inputs(seed: Seed) -> None:
    inits = seed.initializers()

    @fuzz_settings(EXAMPLES)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(inits)))
        changed = dict(inits)
        changed[name] = data.draw(load_time_values(inits[name]), label=name)
        _check_load(seed.model(inits=changed), _culprits(seed))

    run()


@pytest.mark.slow  # ~1 min of CPU for 157 seeds: `make test`, not test-fast
@pytest.mark.parametrize("seed", SEEDS, ids=[s.label for s in SEEDS])
def test_hostile_attributes_are_refused_by_name(seed: Seed) -> None:
    outcome = run_bounded(
        lambda: _fuzz_attributes(seed), memory=1 << 30, seconds=watchdog_seconds(EXAMPLES)
    )
    assert outcome.kind == "ok", str(outcome)


WITH_INITS = [s for s in SEEDS if s.initializers()]


@pytest.mark.slow
@pytest.mark.parametrize("seed", WITH_INITS, ids=[s.label for s in WITH_INITS])
def test_hostile_load_time_operands_are_refused_by_name(seed: Seed) -> None:
    outcome = run_bounded(
        lambda: _fuzz_load_time_inputs(seed), memory=1 << 30, seconds=watchdog_seconds(EXAMPLES)
    )
    assert outcome.kind == "ok", str(outcome)


# -- the seeds themselves ---------------------------------------------------------------------


def test_every_operator_has_a_seed_that_loads() -> None:
    assert {s.op for s in SEEDS} == set(OPS)
    for seed in SEEDS:
        gonnx.load(seed.model())  # a refusal here would make its lane fuzz nothing


def test_every_attribute_an_operator_reads_has_a_spec() -> None:
    for op, entry in OPS.items():
        assert set(entry.specs) == set(entry.attrs), op
