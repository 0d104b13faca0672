"""The fuzz lanes' settings: a bounded example count in `make test`, raised for a longer run.

    GPULAB_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest -q -p no:randomly \
        pylib/tests/test_onnx_fuzz.py pylib/tests/test_loader_fuzz.py

Without the variable every lane draws the same examples each run (derandomized: a red CI is a
regression, not a new draw); with it, each run draws new ones."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

ENV = "GPULAB_FUZZ_EXAMPLES"


def examples(default: int) -> int:
    """The example count of a lane: GPULAB_FUZZ_EXAMPLES when set, else `default`."""
    raw = os.environ.get(ENV, "").strip()
    return int(raw) if raw else default


def fuzz_settings(default: int) -> settings:
    chosen = bool(os.environ.get(ENV, "").strip())
    return settings(
        max_examples=examples(default),
        deadline=None,
        derandomize=not chosen,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def watchdog_seconds(default: int, per_example: float = 2.0) -> float:
    """How long a bounded child may run a lane before it counts as a hang (generous: the
    machine may be loaded)."""
    return 120.0 + per_example * examples(default)
