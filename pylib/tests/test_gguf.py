"""The bounded GGUF reader (gpulab.models.llm.gguf) against gguf-py, and on hostile files.

- every metadata value and tensor info of files written by gguf-py's GGUFWriter reads back as
  gguf-py's own GGUFReader reads it (every value type, arrays, six tensor types, alignment);
- hand-made hostile files (truncated, lying lengths and counts, unknown types, overlapping or
  misaligned tensors) are refused with VALIDATION or LIMIT naming the key or tensor;
- a hypothesis fuzz: truncations, overwritten words and random bytes of a valid file give a
  checked file or a GpuLabError, never another exception, and never a tensor outside the file.
"""

from __future__ import annotations

import functools
import struct
import tempfile
from pathlib import Path

import gguf  # gguf-py, a test dependency: the reference reader and writer
import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.models.llm import gguf as reader
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

Q = gguf.GGMLQuantizationType


def write_reference_file(path, alignment: int | None = None) -> dict[str, np.ndarray]:
    """A GGUF file of every value type and six tensor types, written by gguf-py."""
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 65000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 1.5e-3)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ▁world")
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", 3.141592653589793)
    w.add_array("t.strs", ["a", "", "ü", "<0x0A>"])
    w.add_array("t.ints", [1, -2, 3])
    w.add_array("t.floats", [0.5, -1.25])
    w.add_array("t.bools", [True, False, True])
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.standard_normal((3, 7)).astype(np.float32),
        "f16": rng.standard_normal((2, 5)).astype(np.float16),
        "vec": rng.standard_normal(11).astype(np.float32),
    }
    for name, arr in tensors.items():
        w.add_tensor(name, arr)
    for name, qtype, shape in (
        ("q8", Q.Q8_0, (4, 64)),
        ("q4", Q.Q4_0, (3, 96)),
        ("q4k", Q.Q4_K, (2, 256)),
        ("q6k", Q.Q6_K, (2, 512)),
    ):
        x = rng.standard_normal(shape).astype(np.float32)
        if qtype in (Q.Q8_0, Q.Q4_0):
            raw = gguf.quants.quantize(x, qtype)
        else:  # gguf-py has no k-quant quantizer: gpulab's ports of ggml's
            from gpulab import quant

            raw = np.frombuffer(quant.quantize(x, qtype.name.lower()), np.uint8)
            raw = raw.reshape(shape[0], -1)
        w.add_tensor(name, raw, raw_dtype=qtype)
        tensors[name] = raw
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors


@pytest.mark.parametrize("alignment", [None, 64])
def test_reads_what_gguf_py_reads(tmp_path, alignment) -> None:
    path = tmp_path / "ref.gguf"
    write_reference_file(path, alignment)
    ours = reader.open_gguf(path)
    ref = gguf.GGUFReader(str(path))
    # metadata: every key gguf-py sees (its GGUF.* header pseudo-fields aside), same values
    keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    assert sorted(keys) == sorted(ours.fields)
    for key in keys:
        want = ref.fields[key].contents()
        got = ours.get(key)
        got = list(got) if isinstance(got, (list, tuple)) or hasattr(got, "tolist") else got
        if isinstance(want, float) or (
            isinstance(want, list) and want and isinstance(want[0], float)
        ):
            assert np.array_equal(np.float64(got), np.float64(want)), key
        else:
            assert got == want, key
    assert ours.alignment == (alignment or 32)
    # tensors: names, types, shapes, absolute offsets, bytes
    assert [t.name for t in ref.tensors] == list(ours.tensors)
    for t in ref.tensors:
        info = ours.info(t.name)
        assert info.type_id == int(t.tensor_type), t.name
        assert list(info.dims) == [int(d) for d in t.shape], t.name
        assert info.start == int(t.data_offset), t.name
        assert info.nbytes == int(t.n_bytes), t.name
        assert bytes(ours.raw(t.name)) == t.data.tobytes(), t.name


def test_typed_accessors_name_the_key(tmp_path) -> None:
    path = tmp_path / "ref.gguf"
    write_reference_file(path)
    f = reader.open_gguf(path)
    assert f.integer("t.u32") == 4_000_000_000
    assert f.number("t.f32") == pytest.approx(1.5e-3)
    assert f.string("general.architecture") == "llama"
    assert f.integer("missing.key", 7) == 7
    with pytest.raises(GpuLabError, match="'t.str' is a string, expected an integer"):
        f.integer("t.str")
    with pytest.raises(
        GpuLabError, match="'t.ints' is a array of int32, expected an array of string"
    ):
        f.array("t.ints", ("string",))
    with pytest.raises(GpuLabError, match="key 'nope' is missing"):
        f.string("nope")


# -- hostile files, made by hand so each lie sits at a known place ------------------------------


def gstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv_u32(key: str, v: int) -> bytes:
    return gstr(key) + struct.pack("<II", 4, v)


def tensor_info(name: str, dims, type_id: int, offset: int) -> bytes:
    return (
        gstr(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", type_id, offset)
    )


def gguf_bytes(kvs=(), infos=(), data=b"", n_kv=None, n_tensors=None, version=3) -> bytes:
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        len(infos) if n_tensors is None else n_tensors,
        len(kvs) if n_kv is None else n_kv,
    )
    body = head + b"".join(kvs) + b"".join(infos)
    body += b"\0" * (-len(body) % 32)
    return body + data


def good_file() -> bytes:
    return gguf_bytes(
        [kv_u32("a.b", 1), gstr("arr") + struct.pack("<IIQ", 9, 4, 2) + struct.pack("<II", 5, 6)],
        [tensor_info("w", [4, 2], 0, 0), tensor_info("v", [32], 8, 32)],
        bytes(32) + bytes(34),
    )


def test_the_hand_made_file_reads() -> None:
    f = reader.read(good_file())
    assert f.integer("a.b") == 1 and list(f.get("arr")) == [5, 6]
    assert f.info("w").shape == (2, 4) and f.info("v").type_name == "Q8_0"


HOSTILE = [
    # (file, code, words the message must hold)
    (b"GGML" + bytes(20), "VALIDATION", "not a GGUF file"),
    (gguf_bytes(version=1), "VALIDATION", "version 1"),
    (gguf_bytes(n_tensors=2**40), "LIMIT", "tensor count"),
    (gguf_bytes(n_kv=2**40), "LIMIT", "metadata count"),
    (gguf_bytes(n_kv=3), "VALIDATION", "3 metadata entries"),
    (gguf_bytes([struct.pack("<Q", 2**62) + b"k"]), "LIMIT", "metadata key 0"),
    (
        gguf_bytes([gstr("k") + struct.pack("<I", 77)]),
        "VALIDATION",
        "key 'k': unknown value type 77",
    ),
    (gguf_bytes([gstr("k") + struct.pack("<IQ", 8, 1000) + b"abc"]), "VALIDATION", "key 'k'"),
    (gguf_bytes([gstr("k") + struct.pack("<IIQ", 9, 4, 2**23)]), "VALIDATION", "key 'k''s 8388608"),
    (gguf_bytes([gstr("k") + struct.pack("<IIQ", 9, 4, 2**60)]), "LIMIT", "key 'k': an array"),
    (gguf_bytes([gstr("k") + struct.pack("<IIQ", 9, 9, 1)]), "VALIDATION", "arrays of arrays"),
    (gguf_bytes([gstr("k") + struct.pack("<IIQ", 9, 99, 1)]), "VALIDATION", "item type 99"),
    (gguf_bytes([kv_u32("k", 1), kv_u32("k", 2)]), "VALIDATION", "key 'k' appears twice"),
    (gguf_bytes([kv_u32("general.alignment", 24)]), "VALIDATION", "general.alignment"),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 2], 99, 0)], data=bytes(32)),
        "VALIDATION",
        "tensor 'w' has unknown ggml type 99",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 0], 0, 0)], data=bytes(32)),
        "VALIDATION",
        "tensor 'w' has dims [4, 0]",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [2] * 5, 0, 0)], data=bytes(32)),
        "VALIDATION",
        "5 dimensions",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 2**40], 0, 0)], data=bytes(32)),
        "VALIDATION",
        "tensor 'w'",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 2], 0, 2**63)], data=bytes(32)),
        "VALIDATION",
        "tensor 'w'",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 2], 0, 8)], data=bytes(64)),
        "VALIDATION",
        "not a multiple of the alignment",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [30], 8, 0)], data=bytes(64)),
        "VALIDATION",
        "rows of 30 values",
    ),
    (
        gguf_bytes(
            infos=[tensor_info("w", [4, 4], 0, 0), tensor_info("v", [4], 0, 32)], data=bytes(64)
        ),
        "VALIDATION",
        "'v''s bytes overlap those of 'w'",
    ),
    (
        gguf_bytes(
            infos=[tensor_info("w", [4], 0, 0), tensor_info("w", [4], 0, 32)], data=bytes(64)
        ),
        "VALIDATION",
        "tensor 'w' appears twice",
    ),
    (
        gguf_bytes(infos=[tensor_info("w", [4, 2], 0, 0)], data=bytes(16)),
        "VALIDATION",
        "runs past the end",
    ),
]


@pytest.mark.parametrize("data, code, words", HOSTILE, ids=[h[2] for h in HOSTILE])
def test_hostile_files_are_refused_naming_the_field(data, code, words) -> None:
    with pytest.raises(GpuLabError) as err:
        reader.read(data)
    assert err.value.code == code
    assert words in err.value.message


@pytest.mark.parametrize("cut", [0, 3, 4, 7, 8, 23, 24, 40])
def test_truncated_headers_are_refused(cut) -> None:
    with pytest.raises(GpuLabError) as err:
        reader.read(good_file()[:cut])
    assert err.value.code == "VALIDATION"


# -- the fuzz ------------------------------------------------------------------------------------


def check_or_refuse(data: bytes) -> None:
    """A checked file (every tensor inside it) or a GpuLabError; anything else fails."""
    try:
        f = reader.read(data)
    except GpuLabError as err:
        assert err.code in ("VALIDATION", "LIMIT"), err
        return
    for info in f.tensors.values():
        assert f.data_start <= info.start <= info.end <= len(data)
        assert len(f.raw(info.name)) == info.nbytes


@functools.cache
def written_by_gguf_py() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ref.gguf"
        write_reference_file(path)
        return path.read_bytes()


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.data())
def test_fuzz_truncations_and_overwrites(data) -> None:
    base = bytearray(data.draw(st.sampled_from([good_file, written_by_gguf_py]))())
    kind = data.draw(st.sampled_from(["truncate", "word", "bytes"]))
    if kind == "truncate":
        check_or_refuse(bytes(base[: data.draw(st.integers(0, len(base)))]))
        return
    at = data.draw(st.integers(0, len(base) - 1))
    if kind == "word":
        word = data.draw(st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**62, 2**64 - 1]))
        blob = struct.pack("<Q", word)
    else:
        blob = data.draw(st.binary(min_size=1, max_size=16))
    base[at : at + len(blob)] = blob
    check_or_refuse(bytes(base))


@FUZZ
@given(st.binary(max_size=512))
def test_fuzz_random_bytes_after_the_magic(tail) -> None:
    check_or_refuse(b"GGUF" + struct.pack("<I", 3) + tail)
