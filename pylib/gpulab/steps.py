"""The step argument of a session run, checked the same way natively and in the page.

`run_steps(steps)`: a step count (an int >= 1, not a bool) or an iterable of feed maps (None
counts as an empty map). Either is bounded by the op table's `max_steps` before anything is
built or sent: a count past it, or an iterable yielding more (an endless generator stops at
max_steps + 1), is `LIMIT`; anything else (2.5, "3", a dict, an object) is `VALIDATION`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from . import optable
from .errors import GpuLabError


def step_arg(steps: Any) -> int | list[Any]:
    """The count, or the list of steps (each a Mapping or None); see the module doc."""
    limit = optable.limits()["max_steps"]
    if isinstance(steps, int) and not isinstance(steps, bool):
        if steps < 1:
            raise GpuLabError("VALIDATION", f"run_steps: the step count must be >= 1, got {steps}")
        _check_count(steps, limit)
        return steps
    if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Iterable):
        raise GpuLabError(
            "VALIDATION",
            "run_steps takes a step count (an int) or a list of "
            f"feed maps, got {type(steps).__name__}",
        )
    listed = list(itertools.islice(steps, limit + 1))
    if not listed:
        raise GpuLabError("VALIDATION", "run_steps: no steps given")
    _check_count(len(listed), limit, "more than")
    for index, step in enumerate(listed):
        if step is not None and not isinstance(step, Mapping):
            raise GpuLabError(
                "VALIDATION",
                f"step {index}: a feed map {{input: data}} is needed, got {type(step).__name__}",
            )
    return listed


def _check_count(count: int, limit: int, word: str = "") -> None:
    """LIMIT past max_steps (`word`: "more than" for a list cut at limit + 1)."""
    if count > limit:
        what = f"{word} {limit}" if word else str(count)
        raise GpuLabError(
            "LIMIT",
            f"run_steps: {what} steps, past max_steps {limit} per call "
            "(split a longer run into several calls)",
        )
