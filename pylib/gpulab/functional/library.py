"""The op library's declarations: each op and composite once, with its name in every frontend.

An entry is a function of `gpulab.functional` (a composite, or a protocol op called through
its Tensor method) decorated with `@declare(...)`, which records what each frontend calls it:

    @declare(functional="softplus", nn="Softplus", aten="softplus.default", onnx=onnx("Softplus"))
    def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor: ...

- `gpulab.torch`: `torch` (torch.X functions), `method` (Tensor.X), `functional`
  (torch.nn.functional.X), `nn` (torch.nn.X modules: the constructor takes the function's
  keywords, `forward` calls it), `inplace` (torch's functional and module take `inplace=`);
- the torch.compile backend: `aten` overloads ("softplus.default");
- the ONNX loader: `onnx(...)` per operator type (opset range, attributes to keywords).

Every frontend builds its surface from these records, as ONNX Runtime Web's resolve rules and
tinygrad's name maps do: a name maps to the entry's function through the frontend's generic
adapter, or through the frontend's own parser where the mapping is not the identity (an
argument reordered, a result wrapped). A frontend never computes on its own; gradients come
from the one autograd (a composite of protocol ops needs no rule of its own).

Pure Python, no frontend imported: this module only holds data (`gpulab.functional` re-exports
it; a frontend reads `functional.entries()`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FRONTENDS = ("torch", "method", "functional", "nn", "aten", "onnx")


@dataclass(frozen=True)
class Onnx:
    """An ONNX operator an entry implements: its type in the default domain, the opsets it
    has these semantics in (`since` .. `until`, inclusive; None = to the latest), its
    attributes as (keyword, default) and keywords the operator fixes."""

    op_type: str
    since: int = 1
    until: int | None = None
    attrs: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def covers(self, opset: int) -> bool:
        return self.since <= opset and (self.until is None or opset <= self.until)

    def opsets(self) -> str:
        return f"{self.since}+" if self.until is None else f"{self.since}-{self.until}"


def onnx(
    op_type: str,
    since: int = 1,
    until: int | None = None,
    fixed: Mapping[str, Any] | None = None,
    **attrs: Any,
) -> Onnx:
    """An ONNX name: `attribute=default` (read as the keyword of the same name) or
    `attribute=("keyword", default)`; `fixed` keywords the operator has no attribute for."""
    spec = {
        name: value if isinstance(value, tuple) else (name, value) for name, value in attrs.items()
    }
    return Onnx(op_type, since, until, spec, dict(fixed or {}))


@dataclass(frozen=True)
class Entry:
    """One op of the library: its function and the names each frontend gives it."""

    name: str
    fn: Callable[..., Any]
    torch: tuple[str, ...] = ()
    method: tuple[str, ...] = ()
    functional: tuple[str, ...] = ()
    nn: tuple[str, ...] = ()
    inplace: bool = False
    aten: tuple[str, ...] = ()
    onnx: tuple[Onnx, ...] = ()

    @property
    def doc(self) -> str:
        """The first sentence of the function's docstring, on one line."""
        paragraph = " ".join((inspect.getdoc(self.fn) or "").split("\n\n", 1)[0].split())
        end = paragraph.find(". ")
        return paragraph if end < 0 else paragraph[: end + 1]

    def operands(self) -> list[str]:
        """The function's tensor parameters (annotated Tensor or Tensor | None), in order."""
        return [
            p.name
            for p in inspect.signature(self.fn).parameters.values()
            if str(p.annotation).startswith("Tensor")
        ]

    def keywords(self) -> list[inspect.Parameter]:
        """The function's other parameters: what a module's constructor takes."""
        tensors = set(self.operands())
        return [p for p in inspect.signature(self.fn).parameters.values() if p.name not in tensors]

    def names(self, frontend: str) -> tuple[str, ...]:
        if frontend == "onnx":
            return tuple(o.op_type for o in self.onnx)
        return getattr(self, frontend)


ENTRIES: dict[str, Entry] = {}


def _names(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def declare(
    *,
    torch: str | tuple[str, ...] = (),
    method: str | tuple[str, ...] = (),
    functional: str | tuple[str, ...] = (),
    nn: str | tuple[str, ...] = (),
    inplace: bool = False,
    aten: str | tuple[str, ...] = (),
    onnx: Onnx | tuple[Onnx, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Record the decorated function as an entry of the library under its own name, with
    its frontend names; a name another entry already has is refused at import."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        entry = Entry(
            fn.__name__,
            fn,
            _names(torch),
            _names(method),
            _names(functional),
            _names(nn),
            inplace,
            _names(aten),
            (onnx,) if isinstance(onnx, Onnx) else tuple(onnx),
        )
        _check_unique(entry)
        ENTRIES[entry.name] = entry
        return fn

    return register


def _check_unique(new: Entry) -> None:
    if new.name in ENTRIES:
        raise ValueError(f"op library: {new.name!r} is declared twice")
    for entry in ENTRIES.values():
        for frontend in FRONTENDS[:-1]:
            shared = set(entry.names(frontend)) & set(new.names(frontend))
            if shared:
                raise ValueError(
                    f"op library: {frontend} name(s) {sorted(shared)} of {new.name!r} "
                    f"already belong to {entry.name!r}"
                )
        for mine in new.onnx:
            for theirs in entry.onnx:
                overlap = mine.op_type == theirs.op_type and (
                    (theirs.until is None or mine.since <= theirs.until)
                    and (mine.until is None or theirs.since <= mine.until)
                )
                if overlap:
                    raise ValueError(
                        f"op library: ONNX {mine.op_type} opsets {mine.opsets()} of {new.name!r} "
                        f"overlap {theirs.opsets()} of {entry.name!r}"
                    )


def entries() -> Iterator[Entry]:
    """Every entry, in declaration order (gpulab.functional's modules fill ENTRIES as they
    are imported, all of them by the package's __init__)."""
    return iter(list(ENTRIES.values()))


def by_name(frontend: str) -> dict[str, Entry]:
    """A frontend's names (ONNX: op types) -> their entry."""
    return {name: e for e in entries() for name in e.names(frontend)}


def onnx_names() -> dict[str, list[tuple[Onnx, Entry]]]:
    """ONNX op type -> its (opset range, entry) declarations, lowest opset first."""
    out: dict[str, list[tuple[Onnx, Entry]]] = {}
    for entry in entries():
        for spec in entry.onnx:
            out.setdefault(spec.op_type, []).append((spec, entry))
    return {k: sorted(v, key=lambda pair: pair[0].since) for k, v in out.items()}
