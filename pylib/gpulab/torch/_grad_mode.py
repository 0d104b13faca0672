"""Grad mode: `no_grad`, `enable_grad`, `set_grad_enabled`, `is_grad_enabled`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

_STATE = {"enabled": True}


def is_grad_enabled() -> bool:
    return _STATE["enabled"]


class _Mode:
    """A context manager and decorator setting grad mode (as torch's)."""

    enabled = True

    def __enter__(self) -> None:
        self._prev = _STATE["enabled"]
        _STATE["enabled"] = self.enabled

    def __exit__(self, *exc: object) -> None:
        _STATE["enabled"] = self._prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_Mode):
    enabled = False


class enable_grad(_Mode):
    enabled = True


inference_mode = no_grad


class set_grad_enabled(_Mode):
    def __init__(self, mode: bool) -> None:
        self.enabled = bool(mode)
        self._prev = _STATE["enabled"]
        _STATE["enabled"] = self.enabled  # as torch: effective as a plain call too

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _STATE["enabled"] = self._prev
