"""gpulab.torch's op surface, built from the op library's declarations (gpulab.functional):
`torch.X`, `Tensor.X` and `torch.nn.functional.X` (the `nn.X` modules: nn/modules.py).

Every declared name gets its entry's function through a builder of this module: `generic` for
the identity mapping (tensor operands given as float32 nodes, torch's keyword names with
`input` first, `inplace=` where torch's functional takes it, the result a float32 tensor whose
autograd parents are its tensor operands), or the builder `PARSERS` names for the entry where
torch's arguments or dtypes need mapping. Nothing here computes: the math is the entry's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .. import functional as GF
from ..functional import Entry
from ._dtype import bool_, float32, int64
from .tensor import Tensor, _via, as_tensor_like

Builder = Callable[[Entry, str, str], Callable[..., Any]]
FORMS = ("torch", "method", "functional")
ANY = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _signature(entry: Entry, form: str) -> inspect.Signature:
    """The entry's parameters as torch names them: the first operand `input`, then `inplace`
    where torch's functional takes it."""
    params = [
        p.replace(name="input" if i == 0 else p.name, annotation=p.empty, kind=ANY)
        for i, p in enumerate(inspect.signature(entry.fn).parameters.values())
    ]
    if entry.inplace and form == "functional":
        params.append(inspect.Parameter("inplace", ANY, default=False))
    return inspect.Signature(params)


def _bind(name: str, sig: inspect.Signature, args: Any, kwargs: Any) -> dict[str, Any]:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{name}(): {err}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def generic(entry: Entry, name: str, form: str) -> Callable[..., Any]:
    """name(input, ...) -> entry.fn on float32 nodes, a float32 result; `inplace=True` rebinds
    the input to the result, as torch writes into it."""
    sig = _signature(entry, form)
    params = list(inspect.signature(entry.fn).parameters.values())
    is_operand = [str(p.annotation).startswith("Tensor") for p in params]
    names = list(sig.parameters)[: len(params)]

    def fn(*args: Any, **kwargs: Any) -> Tensor:
        values = _bind(name, sig, args, kwargs)
        given = [
            as_tensor_like(values[n]) if op and values[n] is not None else values[n]
            for n, op in zip(names, is_operand, strict=True)
        ]
        parents = [v for v, op in zip(given, is_operand, strict=True) if op and v is not None]
        call = [
            v._f() if op and v is not None else v for v, op in zip(given, is_operand, strict=True)
        ]
        out = Tensor._result(entry.fn(*call), float32, *parents, op=entry.name)
        return given[0]._assign(out, f"{name}(inplace=True)") if values.get("inplace") else out

    return _named(fn, entry, name, sig)


def _named(fn: Callable[..., Any], entry: Entry, name: str, sig: inspect.Signature) -> Any:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}{sig}: gpulab.functional.{entry.name}. {entry.doc}"
    fn.__signature__ = sig  # type: ignore[attr-defined]
    return fn


def same_dtype(entry: Entry, name: str, form: str) -> Callable[..., Any]:
    """name(input, ...) on the input's own dtype (relu keeps int64 an int64): through the
    first dtype the protocol op takes where it does not take the input's."""
    sig = _signature(entry, form)

    def fn(*args: Any, **kwargs: Any) -> Tensor:
        values = _bind(name, sig, args, kwargs)
        t = as_tensor_like(values["input"])
        out = Tensor._result(_via(t._n(), entry.name, entry.fn), t.dtype, t, op=entry.name)
        return t._assign(out, f"{name}(inplace=True)") if values.get("inplace") else out

    return _named(fn, entry, name, sig)


def integers_unchanged(entry: Entry, name: str, form: str) -> Callable[..., Any]:
    """floor / ceil / trunc: an integer tensor is already rounded, and torch returns it in its
    own dtype (a bool tensor is torch's error); a float tensor goes to the entry."""
    sig = _signature(entry, form)
    on_floats = generic(entry, name, form)

    def fn(*args: Any, **kwargs: Any) -> Tensor:
        t = as_tensor_like(_bind(name, sig, args, kwargs)["input"])
        if t.dtype.is_floating_point:
            return on_floats(*args, **kwargs)
        if t.dtype is bool_:
            raise RuntimeError(f"{name}: not implemented for 'Bool'")
        return t.clone()

    return _named(fn, entry, name, sig)


def cumsum_dtypes(entry: Entry, name: str, form: str) -> Callable[..., Any]:
    """torch.cumsum(input, dim, *, dtype=None): dtype= casts the input first; an integer or
    bool input sums to int64 (through float32, exact to 2^24, as `sum`; no gradient)."""
    base = _signature(entry, form)
    keyword = inspect.Parameter("dtype", inspect.Parameter.KEYWORD_ONLY, default=None)
    sig = base.replace(parameters=[*base.parameters.values(), keyword])

    def fn(*args: Any, **kwargs: Any) -> Tensor:
        values = _bind(name, sig, args, kwargs)
        t = as_tensor_like(values["input"])
        if values["dtype"] is not None:
            t = t.to(values["dtype"])
        node = entry.fn(t._f(), values["dim"])
        if t.dtype.is_floating_point:
            return Tensor._result(node, float32, t, op=entry.name)
        return Tensor._result(node.cast(int64.device), int64, op=entry.name)

    return _named(fn, entry, name, sig)


# entry -> its builder, where the identity mapping is not enough
PARSERS: dict[str, Builder] = {
    "relu": same_dtype,
    "trunc": integers_unchanged,
    "floor": integers_unchanged,
    "ceil": integers_unchanged,
    "cumsum": cumsum_dtypes,
}


def _build(entry: Entry, name: str, form: str) -> Callable[..., Any]:
    return PARSERS.get(entry.name, generic)(entry, name, form)


def functions(form: str) -> dict[str, Callable[..., Any]]:
    """The declared names of one form ("torch", "method", "functional") -> callables taking
    the input first."""
    return {name: _build(entry, name, form) for entry in GF.entries() for name in entry.names(form)}


def modules() -> dict[str, tuple[Entry, Callable[..., Any]]]:
    """nn module name -> (its entry, the functional callable its forward calls)."""
    out = {}
    for entry in GF.entries():
        for name in entry.nn:
            fname = entry.functional[0] if entry.functional else entry.name
            out[name] = (entry, _build(entry, fname, "functional"))
    return out


def _method(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def install_methods() -> list[str]:
    """Set every declared Tensor method on the class; the names set."""
    made = functions("method")
    for name, fn in made.items():
        if name in Tensor.__dict__:
            raise ValueError(f"Tensor.{name} is declared in the op library and written by hand")
        setattr(Tensor, name, _method(fn))
    return sorted(made)


def unused_parsers() -> list[str]:
    """Parsers whose entry no longer declares a gpulab.torch name (a test keeps this empty)."""
    torch_entries = {e.name for e in GF.entries() if any(e.names(f) for f in (*FORMS, "nn"))}
    return sorted(set(PARSERS) - torch_entries)


METHODS = install_methods()
