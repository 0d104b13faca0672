"""Result records shared by the host, sessions and the page bridge: outputs, attempts, stats.

An output entry is `{"shape": [...], "dtype": "float32", "data": [...]}` (docs/protocol.md);
natively it also holds `"array"`, the numpy array of the output's shape. Data stays binary until
someone asks: `entry["data"]` (the flat list of numbers the protocol promises) is made from the
array or buffer at C speed (`tolist()`) on first access and kept, so a run whose caller reads
`array` (or one loss value) never builds 200 000 Python floats for a weight matrix.

This module imports only `dtypes` (the protocol's dtype table), so `host` and `session` both
depend on it and no longer on each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .dtypes import DTYPE_NUMPY


class OutputEntry(dict):
    """One output: a dict whose `"data"` list is built on first access from `flat`, a flat
    buffer of the dtype (a numpy array natively, an `array.array` in the page).

    Every way of reading the dict (`[]`, `get`, `in`, iteration, `items()`, `json.dumps`,
    `repr`, `dict(entry)`) sees `"data"`; only the list is deferred."""

    __slots__ = ("_flat",)

    def __init__(self, items: dict[str, Any], flat: Any) -> None:
        super().__init__(items)
        self._flat = flat

    def _materialize(self) -> None:
        if self._flat is not None:
            flat, self._flat = self._flat, None
            dict.__setitem__(self, "data", flat.tolist())

    def __missing__(self, key: str) -> Any:
        if key == "data" and self._flat is not None:
            self._materialize()
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key == "data" and self._flat is not None or dict.__contains__(self, key)

    def __iter__(self) -> Iterator[str]:
        self._materialize()
        return dict.__iter__(self)

    def __len__(self) -> int:
        return dict.__len__(self) + (self._flat is not None)

    def __eq__(self, other: object) -> bool:
        self._materialize()
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]  # as dict

    def __repr__(self) -> str:
        self._materialize()
        return dict.__repr__(self)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "data":
            self._materialize()
        return dict.get(self, key, default)

    def keys(self) -> Any:
        self._materialize()
        return dict.keys(self)

    def items(self) -> Any:
        self._materialize()
        return dict.items(self)

    def values(self) -> Any:
        self._materialize()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        self._materialize()
        return dict(dict.items(self))

    def __reduce__(self) -> Any:  # pickles (and copy.deepcopy) as a plain dict
        return (dict, (self.copy(),))

    def tolist(self) -> Any:
        """The values nested by `shape` (as numpy's `tolist()`): a number for shape [], a list
        of rows for [rows, cols]; `data` stays the protocol's flat list."""
        return nested(self["data"], [int(n) for n in self["shape"]])


def nested(flat: list[Any], shape: list[int]) -> Any:
    """A flat row-major list as nested lists of `shape`."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [nested(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _materializing(name: str) -> Any:
    """A dict method that first builds `data` (so a write, a delete or a pop of it is not
    undone by a later first read)."""
    method = getattr(dict, name)

    def wrapper(self: OutputEntry, *args: Any, **kwargs: Any) -> Any:
        self._materialize()
        return method(self, *args, **kwargs)

    wrapper.__name__ = name
    return wrapper


for _name in (
    "__setitem__",
    "__delitem__",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "clear",
    "__ior__",
):
    setattr(OutputEntry, _name, _materializing(_name))


def output_entry(
    value: Any, shape: tuple[int, ...] | list[int], dtype: str = "float32"
) -> OutputEntry:
    """A native output: `array` (numpy, shaped, of the dtype), `data` deferred."""
    import numpy as np

    # (native byte order: DTYPE_NUMPY is little-endian, as on the wire, the same here)
    arr = np.asarray(value, dtype=np.dtype(DTYPE_NUMPY[dtype]).newbyteorder("=")).reshape(
        tuple(shape)
    )
    return OutputEntry({"shape": list(shape), "dtype": dtype, "array": arr}, arr.reshape(-1))


def buffer_entry(flat: Any, shape: list[int], dtype: str) -> OutputEntry:
    """A page output: `flat` is an `array.array` (or memoryview) of the dtype; `data` deferred."""
    return OutputEntry({"shape": list(shape), "dtype": dtype}, flat)


@dataclass
class Attempts:
    """The record of where a graph tried to run: becomes stats["attempts"]."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, backend: str, ok: bool, reason: str | None = None) -> None:
        self.items.append({"backend": backend, "ok": ok, "reason": reason})


def run_stats(
    executor: Any, attempts: Attempts, fallback: str | None, required_version: int
) -> dict[str, Any]:
    """stats of a native result: attempts, the adapter (None on cpu-python), fallback."""
    info = getattr(executor, "info", None) or {}
    stats: dict[str, Any] = {
        "attempts": attempts.items,
        "adapter": None if executor.name == "cpu-python" else dict(info),
        "software": bool(info.get("software", False)),
        "required_version": required_version,
    }
    if fallback:
        stats["fallback"] = fallback
    return stats
