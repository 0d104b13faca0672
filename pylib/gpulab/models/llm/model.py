"""`gpulab.models.llm`: load a GGUF llama-family model, get logits, generate text.

    from gpulab.models import llm
    model = llm.load("model.gguf")        # a path, bytes, or the bytes of a file the page opened
    model.config                          # n_layer, n_head, n_head_kv, n_embd, vocab_size, ...
    ids = model.tokenizer.encode("Once upon a time")
    logits = model.logits(ids)            # [len(ids), vocab]
    new = model.generate(ids, max_new_tokens=32, temperature=0.8, top_k=40, seed=1,
                         on_token=lambda t: print(model.tokenizer.decode([t]), end=""))

The same program runs natively (wgpu or cpu-python) and in the page (WebGPU, WebGL2, wasm, cpu;
`generate_async` / `logits_async` in browsers without JSPI). gpulab.models.llm.session says how
generation runs on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.graph import Graph

from . import gguf
from .config import Config, read_config
from .llama import prompt_logits
from .sampling import sampler_key
from .session import (
    MAX_CHUNK,
    MAX_SESSIONS,
    MAX_SESSIONS_PAGE,
    Plan,
    SessionCache,
    capacity_for,
    generation,
)
from .step import decode_graph
from .tokenizer import Tokenizer, read_tokenizer
from .weights import LlamaWeights, read_weights

# Cache positions a session may hold in the page: its caches (2 * n_layer * n_head_kv * head_dim
# floats a position) share the runtime's device quota with the weights (docs/llm.md).
PAGE_CONTEXT_LIMIT = 2048
# Where `gpulab serve --model PATH` serves its file to the page (gpulab.server).
SERVED_MODEL_URL = "/models/llm/model.gguf"

__all__ = ["LLM", "SERVED_MODEL_URL", "load", "load_async", "served_model"]


def _in_page() -> bool:
    try:
        import js  # noqa: F401  (Pyodide)
    except ImportError:
        return False
    return True


def _bytes_of(source: Any) -> Any:
    """Bytes-like data of a path, bytes, a binary file, or a Pyodide JsProxy of an ArrayBuffer
    / Uint8Array (a file the page opened)."""
    if isinstance(source, (str, Path)):
        return source
    if hasattr(source, "to_py") and not isinstance(source, (bytes, bytearray, memoryview)):
        return source.to_py()
    return source


class LLM:
    """A loaded model: config, tokenizer, weights, and the decode sessions it keeps."""

    def __init__(self, file: gguf.GGUFFile) -> None:
        self.file = file
        self.tokenizer: Tokenizer = read_tokenizer(file)
        embd = file.info("token_embd.weight") if "token_embd.weight" in file.tensors else None
        if embd is None:
            raise GpuLabError("VALIDATION", "gguf: tensor 'token_embd.weight' is missing")
        vocab = embd.shape[0]
        if vocab < self.tokenizer.vocab_size:
            raise GpuLabError(
                "VALIDATION",
                f"gguf: token_embd.weight has {vocab} rows for {self.tokenizer.vocab_size} tokens",
            )
        self.config: Config = read_config(file, vocab)
        self.weights: LlamaWeights = read_weights(file, self.config)
        page = _in_page()
        self.context_limit = PAGE_CONTEXT_LIMIT if page else self.config.context_length
        self._sessions = SessionCache(MAX_SESSIONS_PAGE if page else MAX_SESSIONS)

    def __repr__(self) -> str:
        c = self.config
        return (
            f"LLM({c.architecture}: {c.n_layer} layers, n_embd {c.n_embd}, heads {c.n_head}/"
            f"{c.n_head_kv}, vocab {c.vocab_size}, {self.weights.nbytes() / 2**20:.1f} MiB)"
        )

    # -- logits --------------------------------------------------------------------------

    def _check_ids(self, ids: Any) -> list[int]:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        flat = list(ids)
        if flat and isinstance(flat[0], (list, tuple)):
            if len(flat) != 1:
                raise GpuLabError("VALIDATION", f"ids: one sequence at a time, got {len(flat)}")
            flat = list(flat[0])
        if not flat:
            raise GpuLabError("VALIDATION", "ids is empty")
        out = []
        for i, t in enumerate(flat):
            if isinstance(t, bool) or not isinstance(t, int) and not float(t).is_integer():
                raise GpuLabError("VALIDATION", f"ids[{i}] = {t!r} is not a token id")
            t = int(t)
            if not 0 <= t < self.config.vocab_size:
                raise GpuLabError(
                    "VALIDATION",
                    f"ids[{i}] = {t} is out of range (vocabulary of {self.config.vocab_size})",
                )
            out.append(t)
        if len(out) > self.context_limit:
            raise GpuLabError(
                "LIMIT", f"{len(out)} ids are past the context of {self.context_limit}"
            )
        return out

    def _logits_graph(self, ids: list[int]) -> tuple[Graph, Any]:
        g = Graph()
        tokens = g.tensor(ids, dtype="int32")
        return g, prompt_logits(g, self.weights, self.config, tokens)

    def logits(self, ids: Any, backend: str | None = None) -> Any:
        """The logits [len(ids), vocab] of every position of a prompt, one graph run
        (natively a float32 numpy array; in the page a list of rows)."""
        g, y = self._logits_graph(self._check_ids(ids))
        return _rows(g.run(backend=backend, logits=y)["outputs"]["logits"])

    async def logits_async(self, ids: Any, backend: str | None = None) -> Any:
        g, y = self._logits_graph(self._check_ids(ids))
        return _rows((await g.run_async(backend=backend, logits=y))["outputs"]["logits"])

    # -- generate ------------------------------------------------------------------------

    def _request(
        self,
        ids: Any,
        max_new_tokens: int,
        temperature: float,
        top_k: int | None,
        top_p: float | None,
        seed: int,
        tokens_per_submission: int | None,
    ) -> tuple[Plan, int, tuple]:
        prompt = self._check_ids(ids)
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise GpuLabError(
                "VALIDATION", f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}"
            )
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise GpuLabError("VALIDATION", f"seed must be an int, got {seed!r}")
        if tokens_per_submission is not None and not (
            isinstance(tokens_per_submission, int) and 1 <= tokens_per_submission <= MAX_CHUNK
        ):
            raise GpuLabError(
                "VALIDATION",
                f"tokens_per_submission must be an int in 1..{MAX_CHUNK} or None, got "
                f"{tokens_per_submission!r}",
            )
        key = sampler_key(temperature, top_k, top_p)
        capacity = capacity_for(
            len(prompt) + max_new_tokens, self.config.context_length, self.context_limit
        )
        return Plan(prompt, seed, float(temperature), top_p), capacity, key

    def _graph_for(self, capacity: int, key: tuple) -> Any:
        return decode_graph(self.weights, self.config, capacity, MAX_CHUNK, key)

    def generate(
        self,
        ids: Any,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
        backend: str | None = None,
        on_token: Callable[[int], Any] | None = None,
        tokens_per_submission: int | None = None,
    ) -> list[int]:
        """New token ids after `ids` (EOS included when it ends the text), sampled on the
        device: greedy at temperature 0, else from softmax(logits / temperature) within top_k
        / top_p; `seed` gives the same tokens on every backend. `on_token(id)` streams them as
        each submission returns. tokens_per_submission: decode steps per submission (None:
        the host aims at 20 ms a submission)."""
        plan, capacity, key = self._request(
            ids, max_new_tokens, temperature, top_k, top_p, seed, tokens_per_submission
        )
        session = self._session(backend, capacity, key)
        return _drive(
            generation(
                plan, max_new_tokens, self.tokenizer.eos_id, tokens_per_submission, on_token
            ),
            lambda steps: _out(session.run_steps(steps)),
        )

    async def generate_async(
        self,
        ids: Any,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
        backend: str | None = None,
        on_token: Callable[[int], Any] | None = None,
        tokens_per_submission: int | None = None,
    ) -> list[int]:
        """`generate` that awaits the GPU (every browser, JSPI or not)."""
        plan, capacity, key = self._request(
            ids, max_new_tokens, temperature, top_k, top_p, seed, tokens_per_submission
        )
        session = await self._session_async(backend, capacity, key)
        loop = generation(
            plan, max_new_tokens, self.tokenizer.eos_id, tokens_per_submission, on_token
        )
        reply = None
        try:
            while True:
                _, steps = loop.send(reply)
                reply = _out(await session.run_steps_async(steps))
        except StopIteration as done:
            return list(done.value)

    def _session(self, backend: str | None, capacity: int, key: tuple) -> Any:
        found = self._sessions.find(backend, capacity, key)
        if found is not None:
            return found[1]
        self._sessions.make_room()
        d = self._graph_for(capacity, key)
        session = d.graph.prepare(feeds=d.feeds, carry=d.carry, backend=backend, out=d.out)
        self._sessions.add(backend, capacity, key, session)
        return session

    async def _session_async(self, backend: str | None, capacity: int, key: tuple) -> Any:
        found = self._sessions.find(backend, capacity, key)
        if found is not None:
            return found[1]
        self._sessions.make_room()
        d = self._graph_for(capacity, key)
        session = await d.graph.prepare_async(
            feeds=d.feeds, carry=d.carry, backend=backend, out=d.out
        )
        self._sessions.add(backend, capacity, key, session)
        return session

    def close(self) -> None:
        """Dispose the decode sessions (their device memory)."""
        self._sessions.close()


def _drive(loop: Generator[Any, Any, list[int]], run: Callable[[Any], Any]) -> list[int]:
    reply = None
    try:
        while True:
            _, steps = loop.send(reply)
            reply = run(steps)
    except StopIteration as done:
        return list(done.value)


def _out(result: dict) -> list[int]:
    entry = result["outputs"]["out"]
    data = entry.get("array") if isinstance(entry, dict) else None
    data = entry["data"] if data is None else data
    return [int(v) for v in data]


def _rows(entry: dict) -> Any:
    array_ = entry.get("array")
    if array_ is not None:
        return array_
    data, (t, v) = list(entry["data"]), entry["shape"]
    return [[float(x) for x in data[r * v : (r + 1) * v]] for r in range(t)]


def load(source: Any) -> LLM:
    """A model from a GGUF file: a path (memory-mapped natively), bytes-like data, a binary
    file object, or the bytes of a file the page opened."""
    return LLM(gguf.open_gguf(_bytes_of(source)))


def _is_url(source: Any) -> bool:
    return isinstance(source, str) and source.startswith(("/", "http://", "https://"))


def _is_page_file(source: Any) -> bool:
    """A File (or Blob) the page opened: display.pick_file's answer."""
    return all(hasattr(source, a) for a in ("slice", "size", "arrayBuffer"))


async def load_async(source: Any, label: str = "model") -> LLM:
    """`load`, and in the page a URL too (e.g. SERVED_MODEL_URL, what `gpulab serve --model
    PATH` serves) or a File the page opened (`await display.pick_file(".gguf")`), streamed into
    memory with a progress bar under `label`. A file larger than the page runtime's device
    memory quota is refused (LIMIT, naming the quota) before it is read."""
    if _in_page() and (_is_url(source) or _is_page_file(source)):
        from gpulab.models.page_fetch import fetch_bytes, quota_check, read_file
        from gpulab.pyodide_bridge import memory_quota

        if _is_url(source):
            check = quota_check(memory_quota(), source)
            source = await fetch_bytes(source, label=label, check_size=check)
        else:
            check = quota_check(memory_quota(), str(source.name))
            source = await read_file(source, label=label, check_size=check)
    return load(source)


async def served_model() -> str | None:
    """In the page: SERVED_MODEL_URL when the page's server serves a model (`gpulab serve
    --model PATH`), else None; natively always None."""
    if not _in_page():
        return None
    from js import Object, fetch  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    head = await fetch(
        SERVED_MODEL_URL, to_js({"method": "HEAD"}, dict_converter=Object.fromEntries)
    )
    return SERVED_MODEL_URL if head.ok else None
