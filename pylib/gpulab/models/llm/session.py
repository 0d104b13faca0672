"""Generation on the device: one prepared session per (backend, cache length, sampler).

The step graph (llama.decode_step) takes one token per step; its keys and values go into caches
[n_head_kv, head_dim, capacity] / [n_head_kv, capacity, head_dim] per layer that the session
carries from step to step (never read back), written at the step's position by
functional.kv_cache_write (a one-hot of the fed position: the protocol's slice_scatter takes its
slice as an attribute, fixed per graph, and a step's position changes every step), and masked past
it. The sampled token is carried to the next step and written into a carried `out` buffer at the
step's slot, the only value read back: a submission of k steps returns k tokens.

A generation is:
- prefill, one submission: a step per prompt token (the token fed, no slot) -- the last step's
  sample is the first new token;
- decode, submissions of k steps (no token fed: each step reads the carried sample), k chosen by
  the host so a submission takes about TARGET_SECONDS (measured on the previous one), or fixed
  by the caller; generation stops after EOS (the chunk's tokens past it are dropped) or
  max_new_tokens.

Sessions are reused across calls (a cache longer than needed is fine: positions past the current
one are masked) and at most MAX_SESSIONS are kept (one in the page: each holds a copy of the
weights on the device).
"""

from __future__ import annotations

import array
import time
from collections import OrderedDict
from collections.abc import Callable, Generator
from typing import Any

from gpulab.errors import GpuLabError

from .sampling import counter_for

TARGET_SECONDS = 0.020
MAX_CHUNK = 64  # decode steps per submission at most (the out buffer's length)
FIRST_CHUNK = 4
CAPACITY_STEP = 64
MAX_SESSIONS = 2
MAX_SESSIONS_PAGE = 1

__all__ = ["Plan", "SessionCache", "capacity_for", "generation"]

RunRequest = tuple[str, Any]


def capacity_for(needed: int, context_length: int, limit: int) -> int:
    """The cache length of a session for `needed` positions: rounded up to CAPACITY_STEP, at
    most the model's context length and `limit` (LIMIT past it)."""
    top = min(context_length, limit)
    if needed > top:
        raise GpuLabError(
            "LIMIT",
            f"the prompt and max_new_tokens need {needed} positions; the model's context is "
            f"{context_length} and this host's limit {limit}",
        )
    return min(top, -(-needed // CAPACITY_STEP) * CAPACITY_STEP)


class SessionCache:
    """Prepared decode sessions by (backend, capacity, sampler key), least recently used out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sessions: OrderedDict[tuple, Any] = OrderedDict()

    def find(self, backend: Any, capacity: int, key: tuple) -> tuple[tuple, Any] | None:
        """A live session of this backend and sampler whose cache holds `capacity` positions."""
        for k, s in self._sessions.items():
            if k[0] == backend and k[2] == key and k[1] >= capacity:
                if s.disposed or getattr(s, "poisoned", None):
                    continue
                self._sessions.move_to_end(k)
                return k[1], s
        return None

    def make_room(self) -> None:
        """Dispose the least recently used (and any dead) sessions so a new one fits."""
        for k in [
            k for k, s in self._sessions.items() if s.disposed or getattr(s, "poisoned", None)
        ]:
            self._sessions.pop(k).dispose()
        while len(self._sessions) >= self.limit:
            _, old = self._sessions.popitem(last=False)
            old.dispose()

    def add(self, backend: Any, capacity: int, key: tuple, session: Any) -> None:
        self._sessions[(backend, capacity, key)] = session

    def close(self) -> None:
        while self._sessions:
            self._sessions.popitem()[1].dispose()


class Plan:
    """The feeds of one generation's steps."""

    def __init__(self, prompt: list[int], seed: int, temperature: float, top_p: float | None):
        self.prompt = prompt
        self.seed = seed
        self.inv_temp = 0.0 if temperature == 0 else 1.0 / temperature
        self.top_p = 1.0 if top_p is None else float(top_p)

    def step(self, token: int, position: int, slot: int) -> dict[str, Any]:
        return {
            "tok": array.array("i", [token]),
            "pos": array.array("i", [position]),
            "slot": array.array("i", [slot]),
            "counter": array.array("I", [counter_for(self.seed, position)]),
            "inv_temp": array.array("f", [self.inv_temp]),
            "top_p": array.array("f", [self.top_p]),
        }

    def prefill(self) -> list[dict[str, Any]]:
        """A step per prompt token; the last writes the first new token into slot 0."""
        n = len(self.prompt)
        return [self.step(t, p, 0 if p == n - 1 else -1) for p, t in enumerate(self.prompt)]

    def decode(self, first_position: int, count: int) -> list[dict[str, Any]]:
        """`count` steps from `first_position`, each reading the carried token, slots 0.."""
        return [self.step(-1, first_position + j, j) for j in range(count)]


def generation(
    plan: Plan,
    max_new_tokens: int,
    eos_id: int | None,
    chunk: int | None,
    on_token: Callable[[int], Any] | None,
) -> Generator[RunRequest, Any, list[int]]:
    """The host's side of a generation as a coroutine: it yields ("run", steps) and is sent
    the read-back `out` tokens (a sequence of ints) of that submission; returns the new ids.
    The same loop serves the blocking and the awaitable forms."""
    new: list[int] = []
    if max_new_tokens <= 0:
        return new
    out = yield ("run", plan.prefill())
    if _take(new, [out[0]], eos_id, on_token, max_new_tokens):
        return new
    k = chunk or FIRST_CHUNK
    while len(new) < max_new_tokens:
        count = min(k, max_new_tokens - len(new), MAX_CHUNK)
        started = time.perf_counter()
        out = yield ("run", plan.decode(len(plan.prompt) + len(new) - 1, count))
        spent = time.perf_counter() - started
        if _take(new, list(out[:count]), eos_id, on_token, max_new_tokens):
            break
        if chunk is None:  # aim the next submission at TARGET_SECONDS
            per_step = spent / count
            k = max(
                1, min(MAX_CHUNK, round(TARGET_SECONDS / per_step) if per_step > 0 else MAX_CHUNK)
            )
    return new


def _take(
    new: list[int],
    tokens: list[int],
    eos_id: int | None,
    on_token: Callable[[int], Any] | None,
    limit: int,
) -> bool:
    """Append tokens (streaming each); True when EOS or the limit ended the generation."""
    for t in tokens:
        new.append(int(t))
        if on_token is not None:
            on_token(int(t))
        if int(t) == eos_id or len(new) >= limit:
            return True
    return False
