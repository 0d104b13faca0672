"""The byte-level fuzz lane of every file loader (hostile.loaders.LOADERS: the ONNX protobuf
reader, safetensors with the MiniLM weights' metadata, GGUF; a new loader is one line there): random
bytes, and a valid file with bytes overwritten, cut short or spliced, must end in a result or
a GpuLabError refusal with the loader's prefix, never another exception. Plus the safetensors
header lane: JSON headers whose entries have hostile types and values.

Each lane's examples run in a memory-capped child (hostile.bounded). Example counts:
hostile.fuzz (GPULAB_FUZZ_EXAMPLES raises them)."""

from __future__ import annotations

import json
import struct

import pytest
from gpulab.errors import GpuLabError
from hostile.bounded import run_bounded
from hostile.fuzz import fuzz_settings, watchdog_seconds
from hostile.loaders import LOADERS, Loader, read_every_tensor
from hypothesis import given
from hypothesis import strategies as st

EXAMPLES = 200  # per loader and lane in `make test`


def _read(loader: Loader, data: bytes) -> None:
    try:
        loader.read(data)
    except GpuLabError as err:
        assert err.code in loader.codes, f"{err.code}: {err.message}"
        assert err.message.startswith(loader.prefix), err.message


def _bounded(lane) -> None:
    outcome = run_bounded(lane, memory=1 << 30, seconds=watchdog_seconds(EXAMPLES, 0.5))
    assert outcome.kind == "ok", str(outcome)


@pytest.mark.parametrize("loader", LOADERS, ids=[x.name for x in LOADERS])
def test_random_bytes_are_refused_cleanly(loader: Loader) -> None:
    @fuzz_settings(EXAMPLES)
    @given(st.binary(max_size=600))
    def lane(data: bytes) -> None:
        _read(loader, data)

    _bounded(lane)


@st.composite
def mutations(draw, size: int):
    """(overwrites, cut, splice): bytes set at positions, a length to cut the file to (or
    None), and a (start, stop, inserted) replacement of a span."""
    edits = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 255)), max_size=8))
    cut = draw(st.one_of(st.none(), st.integers(0, size)))
    splice = draw(
        st.one_of(
            st.none(),
            st.tuples(st.integers(0, size), st.integers(0, size), st.binary(max_size=16)),
        )
    )
    return edits, cut, splice


@pytest.mark.parametrize("loader", LOADERS, ids=[x.name for x in LOADERS])
def test_mutated_files_are_refused_cleanly(loader: Loader) -> None:
    seed = loader.seed()
    _read(loader, seed)  # the seed itself is read without a refusal of another kind

    @fuzz_settings(EXAMPLES)
    @given(mutations(len(seed)))
    def lane(change) -> None:
        edits, cut, splice = change
        raw = bytearray(seed)
        for pos, byte in edits:
            raw[pos] = byte
        if splice is not None:
            start, stop, inserted = splice
            raw[min(start, stop) : max(start, stop)] = inserted
        _read(loader, bytes(raw[:cut] if cut is not None else raw))

    _bounded(lane)


# -- safetensors headers of hostile JSON ------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
dtypes = st.one_of(
    st.sampled_from(["F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"]),
    json_values,
)
shapes = st.one_of(
    st.lists(st.one_of(st.integers(0, 4), st.sampled_from([-1, 2**40, 2**64])), max_size=5),
    st.lists(st.just(2), min_size=9, max_size=40),
    json_values,
)
offsets = st.one_of(
    st.lists(st.integers(-4, 80), min_size=2, max_size=2),
    st.lists(st.sampled_from([0, 2**64, 2**40]), min_size=2, max_size=2),
    json_values,
)
entries = st.one_of(
    st.fixed_dictionaries({"dtype": dtypes, "shape": shapes, "data_offsets": offsets}),
    json_values,
)
metadata = st.one_of(
    st.dictionaries(st.sampled_from(["gpulab.quantized", "format", "x"]), st.text(max_size=40)),
    st.builds(
        lambda quant: {"gpulab.quantized": json.dumps(quant)},
        st.dictionaries(st.sampled_from(["a", "b", "q"]), json_values, max_size=3),
    ),
    json_values,
)


@st.composite
def headers(draw) -> bytes:
    header = draw(st.dictionaries(st.sampled_from(["a", "b", "q"]), entries, max_size=3))
    if draw(st.booleans()):
        header["__metadata__"] = draw(metadata)
    text = json.dumps(header).encode()
    data = draw(st.binary(max_size=80))
    return struct.pack("<Q", len(text)) + text + data


def test_hostile_safetensors_headers_are_refused_cleanly() -> None:
    @fuzz_settings(EXAMPLES)
    @given(headers())
    def lane(blob: bytes) -> None:
        try:
            read_every_tensor(blob)
        except GpuLabError as err:
            assert err.code == "VALIDATION" and err.message.startswith("safetensors:"), err

    _bounded(lane)
