"""gpulab.torch.Tensor: a lazy torch tensor, a protocol node plus (once run) its values.

A Tensor is either a leaf holding concrete values (`_value`: a flat array('f') / array('i') /
list of bools, row-major), or the result of an operation: a node (`_node`) of the current
record's Graph (gpulab.torch._tape) whose value comes when something asks for it (`item`,
`tolist`, `numpy`, `repr`) or when `optimizer.step()` runs the step. Every operation goes
through the public op API (gpulab.Graph, gpulab.Tensor methods, gpulab.functional).

Integers: torch's int64 is held as int32 on the device. The protocol's add/sub/mul/permute are
float32 only, so integer arithmetic and integer transposes run in float32 and are cast back:
exact while values stay within +-2^24 (indices, counts, class targets).
"""

from __future__ import annotations

import array
import math
from collections import namedtuple
from collections.abc import Iterator, Sequence
from typing import Any, Self

from .. import functional as GF
from .. import optable
from ..graph import Tensor as Node
from . import _tape
from ._dtype import bool_, dtype, float32, int32, int64, promote
from ._grad_mode import is_grad_enabled
from ._refuse import refuse

__all__ = ["Size", "Tensor"]

Scalar = (bool, int, float)
values_indices = namedtuple("values_indices", ["values", "indices"])


class Size(tuple):
    """torch.Size: a tuple of ints with numel()."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"


class _GradFn:
    """What `t.grad_fn` shows for a tensor with history: the op that made it."""

    __slots__ = ("op",)

    def __init__(self, op: str) -> None:
        self.op = op

    def name(self) -> str:
        return f"{self.op}Backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>"


class device:
    """The one device of the subset: the gpulab host (the page's backend, or wgpu/cpu-python)."""

    type = "gpulab"

    def __init__(self, spec: Any = "gpulab") -> None:
        self.spec = str(spec)

    def __repr__(self) -> str:
        return "device(type='gpulab')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) or other in ("cpu", "gpulab")

    __hash__ = object.__hash__


DEVICE = device()


class Tensor:
    """A torch tensor of the subset (float32, int64 held as int32, int32, bool; rank <= 4)."""

    __slots__ = (
        "__weakref__",
        "_hist",
        "_leaf",
        "_leaves",
        "_node",
        "_rec",
        "_value",
        "_version",
        "dtype",
        "grad",
        "requires_grad",
        "shape",
    )
    __array_ufunc__ = None  # numpy defers to our reflected operators
    __hash__ = object.__hash__  # identity, as torch (== is elementwise)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def _leaf_of(
        cls, value: Any, shape: Sequence[int], dt: dtype, requires_grad: bool = False
    ) -> Tensor:
        t = object.__new__(cls)
        t._rec = None
        t._node = None
        t._value = value
        t.shape = Size(int(n) for n in shape)
        t.dtype = dt
        t.requires_grad = bool(requires_grad)
        t.grad = None
        t._leaf = True
        t._leaves = frozenset()
        t._hist = frozenset()
        t._version = 0
        return t

    @staticmethod
    def _result(node: Node, dt: dtype, *parents: Any, op: str = "") -> Tensor:
        """A new pending tensor of the current record made from `parents`."""
        rg = is_grad_enabled() and any(isinstance(p, Tensor) and p.requires_grad for p in parents)
        t = object.__new__(Tensor)
        rec = _tape.current()
        rec.last_id = max(rec.last_id, node.id)
        t._rec = rec
        t._node = node
        t._value = None
        t.shape = Size(node.shape)
        t.dtype = dt
        t.requires_grad = rg
        t.grad = None
        t._leaf = not rg
        t._version = 0
        if rg:
            ps = [p for p in parents if isinstance(p, Tensor) and p.requires_grad]
            t._leaves = frozenset().union(*(p._leaf_keys() for p in ps))
            t._hist = frozenset({node.id}).union(*(p._hist for p in ps))
        else:
            t._leaves = frozenset()
            t._hist = frozenset()
        rec.alive.add(t)
        return t

    def _leaf_keys(self) -> frozenset:
        if self._leaf and self.requires_grad:
            return frozenset({(id(self), self._version)})
        return self._leaves

    # -- the node in the current record --------------------------------------------------------

    def _n(self) -> Node:
        """This tensor as a node of the current record (an input node for a value; a pending
        tensor of an older record runs there first)."""
        rec = _tape.current()
        if self._leaf and self.requires_grad:
            if self._value is None:
                self._materialize()
            return rec.leaf_node(self, grad=is_grad_enabled())
        if self._node is not None and self._rec is rec:
            return self._node
        if self._value is None:
            self._materialize()
        self._rec, self._node = rec, rec.constant(self)
        return self._node

    def _f(self) -> Node:
        """The node as float32 (integers and bools cast: exact within +-2^24)."""
        n = self._n()
        return n if n.dtype == "float32" else n.cast("float32")

    def _materialize(self) -> None:
        rec = self._rec
        assert rec is not None and self._node is not None
        (value,) = _tape.run(rec, [(self, self._node)], extra=list(rec.alive))
        self._value = value

    async def _materialize_async(self) -> None:
        rec = self._rec
        if self._value is not None or rec is None or self._node is None:
            return
        (value,) = await _tape.run_async(rec, [(self, self._node)], extra=list(rec.alive))
        self._value = value

    async def item_async(self) -> Any:
        """`item()` awaiting the run (in the page: works without JSPI)."""
        await self._materialize_async()
        return self.item()

    async def tolist_async(self) -> Any:
        """`tolist()` awaiting the run (in the page: works without JSPI)."""
        await self._materialize_async()
        return self.tolist()

    def _values(self) -> Any:
        if self._value is None:
            self._materialize()
        return self._value

    # -- what torch users read ------------------------------------------------------------------

    @property
    def is_leaf(self) -> bool:
        return self._leaf

    @property
    def grad_fn(self) -> _GradFn | None:
        return None if self._leaf or self._node is None else _GradFn(self._node.op)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def device(self) -> device:
        return DEVICE

    @property
    def data(self) -> Tensor:
        return self.detach()

    @property
    def is_cuda(self) -> bool:
        return False

    def dim(self) -> int:
        return len(self.shape)

    ndimension = dim

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[_axis(dim, self.ndim)]

    def numel(self) -> int:
        return math.prod(self.shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar"
            )
        return _py(self._values()[0], self.dtype)

    def tolist(self) -> Any:
        flat = [_py(v, self.dtype) for v in self._values()]
        return _nest(flat, list(self.shape))

    def numpy(self) -> Any:
        """A numpy array (natively only: the page has no numpy); refused for a tensor that
        requires grad, as torch does."""
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use "
                "tensor.detach().numpy() instead."
            )
        import numpy as np

        from ._dtype import NUMPY_NAMES

        return np.array(self._values(), dtype=NUMPY_NAMES[self.dtype]).reshape(self.shape)

    def __repr__(self) -> str:
        body = _fmt(self.tolist())
        extra = (
            ""
            if self.dtype in (float32, int64) or (self.dtype is bool_)
            else f", dtype={self.dtype!r}"
        )
        if self.requires_grad:
            extra += ", requires_grad=True" if self._leaf else f", grad_fn={self.grad_fn!r}"
        return f"tensor({body}{extra})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if self.numel() == 1 and not self.shape else repr(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise refuse(f"Tensor.{name}", "tensor")

    # -- autograd ------------------------------------------------------------------------------

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Gradients of this tensor into the `.grad` of the leaves it depends on (summed into
        an existing `.grad`), through gpulab.autograd.grad on the same Graph."""
        from .autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> Tensor:
        """The same values without history. A pending tensor with history runs first (its
        node would carry gradient in the shared Graph)."""
        if self.requires_grad and not self._leaf:
            self._values()
        t = Tensor._leaf_of(self._value, self.shape, self.dtype)
        if self._value is None:  # no history: the node is safe to share
            t._rec, t._node, t._value = self._rec, self._node, None
        return t

    def detach_(self) -> Tensor:
        if not self._leaf:
            self._values()
            self._node, self._rec = None, None
        self.requires_grad, self._leaf = False, True
        self._leaves, self._hist = frozenset(), frozenset()
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not self._leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._leaf and self._value is None:
            self._values()
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """backward() also fills this intermediate result's .grad (a leaf: nothing to do)."""
        if self._leaf:
            return
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        assert self._rec is not None
        self._rec.retained.add(self)

    @property
    def retains_grad(self) -> bool:
        return not self._leaf and self._rec is not None and self._rec.retained.has(self)

    # -- in place: the tensor is rebound to the new node (values are never mutated) -----------

    def _assign(self, new: Tensor, what: str) -> Tensor:
        if self._leaf and self.requires_grad and is_grad_enabled():
            raise RuntimeError(
                f"a leaf Variable that requires grad is being used in an "
                f"in-place operation ({what})."
            )
        if tuple(new.shape) != tuple(self.shape):
            raise RuntimeError(
                f"{what}: the result shape {list(new.shape)} does not match "
                f"the tensor's {list(self.shape)}"
            )
        new_dtype = new if new.dtype is self.dtype else new.to(self.dtype)
        self._rec, self._node, self._value = new_dtype._rec, new_dtype._node, new_dtype._value
        self._version += 1
        if not self._leaf or new_dtype.requires_grad:  # a plain leaf written with history
            self._leaf = not new_dtype.requires_grad  # becomes a result (CopySlices in torch)
            self.requires_grad = new_dtype.requires_grad
            self._leaves, self._hist = new_dtype._leaves, new_dtype._hist
        if self._value is None:
            assert self._rec is not None
            self._rec.alive.add(self)
        return self

    def zero_(self) -> Tensor:
        zeros = _fill_value(0, self.shape, self.dtype)
        self._rec, self._node, self._value = None, None, zeros
        self._version += 1
        return self

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            return self._assign(_expand_to(value, self.shape), "fill_")
        self._rec, self._node, self._value = None, None, _fill_value(value, self.shape, self.dtype)
        self._version += 1
        return self

    def copy_(self, src: Any) -> Tensor:
        return self._assign(_expand_to(as_tensor_like(src, self), self.shape), "copy_")

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        return self._assign(self.add(other, alpha=alpha), "add_")

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        return self._assign(self.sub(other, alpha=alpha), "sub_")

    def mul_(self, other: Any) -> Tensor:
        return self._assign(self * other, "mul_")

    def div_(self, other: Any) -> Tensor:
        return self._assign(self / other, "div_")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        return self._assign(self.clamp(min, max), "clamp_")

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._assign(self.masked_fill(mask, value), "masked_fill_")

    def __iadd__(self, other: Any) -> Self:
        return self.add_(other)

    def __isub__(self, other: Any) -> Self:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Self:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Self:
        return self.div_(other)

    def __setitem__(self, key: Any, value: Any) -> None:
        """t[key] = value for a basic-indexing key (a slice_scatter, rebinding t); for a bool
        mask of t's shape and one value, masked_fill (no data-dependent shape there)."""
        if isinstance(key, Tensor) and key.dtype is bool_ and tuple(key.shape) == tuple(self.shape):
            if isinstance(value, Tensor) and value.numel() != 1:
                raise refuse("t[mask] = a tensor of several values", "tensor")
            fill = value.reshape(()) if isinstance(value, Tensor) else value
            self._assign(self.masked_fill(key, fill), "__setitem__")
            return
        src = _expand_to(as_tensor_like(value, self).to(self.dtype), self[key].shape)

        def scatter(n: Node) -> Node:
            s = src._n()
            return n.slice_scatter(s if s.dtype == n.dtype else s.cast(n.dtype), key)

        out = _via(self._n(), "slice_scatter", scatter)
        self._assign(Tensor._result(out, self.dtype, self, src, op="slice_scatter"), "__setitem__")

    # -- conversions ---------------------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """`t.to(dtype)`; a device ("cpu", "gpulab") is accepted and changes nothing. A dtype
        outside the subset (PyTorch's torch.float64, ...) is refused by name, never ignored."""
        from ._dtype import as_dtype

        target = None if kwargs.get("dtype") is None else as_dtype(kwargs["dtype"])
        for a in args:
            if isinstance(a, Tensor):
                target = a.dtype
            elif _is_dtype_like(a):
                target = as_dtype(a)
        if target is None or target is self.dtype:
            return self
        return _cast(self, target)

    def type(self, dt: Any = None) -> Any:
        if dt is None:
            return {
                float32: "torch.FloatTensor",
                int64: "torch.LongTensor",
                int32: "torch.IntTensor",
                bool_: "torch.BoolTensor",
            }[self.dtype]
        from ._dtype import as_dtype

        return self.to(as_dtype(dt))

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def float(self, memory_format: Any = None) -> Tensor:
        return self.to(float32)  # memory_format: strides only, values unchanged

    def long(self, memory_format: Any = None) -> Tensor:
        return self.to(int64)  # memory_format: strides only, values unchanged

    def int(self, memory_format: Any = None) -> Tensor:
        return self.to(int32)  # memory_format: strides only, values unchanged

    def bool(self, memory_format: Any = None) -> Tensor:
        return self.to(bool_)  # memory_format: strides only, values unchanged

    def cpu(self) -> Tensor:
        return self

    def contiguous(self) -> Tensor:
        return self

    def clone(self) -> Tensor:
        """A new tensor of the same values (nodes are immutable, so the node is shared)."""
        if self._leaf:
            if self.requires_grad:
                return _unary_result(self, self._n() * 1.0, "clone")
            t = Tensor._leaf_of(self._value, self.shape, self.dtype)
            t._rec, t._node = self._rec, self._node
            if self._value is None and self._rec is not None:
                self._rec.alive.add(t)
            return t
        return _unary_result(self, self._n(), "clone")

    # -- arithmetic ----------------------------------------------------------------------------

    def __add__(self, other: Any) -> Tensor:
        return _arith("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _arith("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _arith("sub", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _arith("sub", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _arith("mul", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _arith("mul", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _arith("div", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _arith("div", other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return matmul(as_tensor_like(other, self), self)

    def __pow__(self, exponent: Any) -> Tensor:
        return pow(self, exponent)

    def __rpow__(self, base: Any) -> Tensor:
        """number ** tensor for a number base > 0: exp(tensor * ln(base))."""
        if not isinstance(base, (int, float)) or isinstance(base, bool) or base <= 0:
            raise refuse(f"{base!r} ** Tensor (a positive number base only)", "tensor")
        return (self.float() * math.log(base)).exp()

    def __neg__(self) -> Tensor:
        return self.neg()

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def add(self, other: Any, alpha: Any = 1) -> Tensor:
        return _arith("add", self, other if alpha == 1 else other * alpha)

    def sub(self, other: Any, alpha: Any = 1) -> Tensor:
        return _arith("sub", self, other if alpha == 1 else other * alpha)

    def mul(self, other: Any) -> Tensor:
        return _arith("mul", self, other)

    def div(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        """a / b; rounding_mode 'trunc' is trunc(a / b) in float32, as torch computes it (the
        op library's trunc: exact, gradient 0). 'floor' is refused: torch's floor division
        is fmod-based (c10's div_floor_floating), which differs from floor(a / b) where a / b
        rounds to an integer, and there is no exact fmod here. Integer operands with a
        rounding mode are refused (torch divides them as integers, and by 0 is an error)."""
        if rounding_mode is None:
            return _arith("div", self, other)
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                f"{rounding_mode!r}"
            )
        if rounding_mode == "floor":
            raise refuse("Tensor.div(rounding_mode='floor') (torch's fmod-based floor)", "tensor")
        if _result_dtype(self, other) is not float32:
            raise refuse("Tensor.div(rounding_mode='trunc') of integer operands", "tensor")
        return _arith("div", self, other).trunc()

    multiply, subtract, divide, true_divide = mul, sub, div, div

    def neg(self) -> Tensor:
        if self.dtype is bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported.")
        if self.dtype.is_floating_point:
            return _unary_result(self, -self._n(), "neg")
        return _unary_result(self, (-self._f()).cast("int32"), "neg")

    negative = neg

    def abs(self) -> Tensor:
        return _unary_result(self, _via(self._n(), "abs", lambda n: n.abs()), "abs")

    def square(self) -> Tensor:
        return self * self

    def sqrt(self) -> Tensor:
        return _float_unary(self, "sqrt")

    def rsqrt(self) -> Tensor:
        return _unary_result(self, 1.0 / self._f().sqrt(), "rsqrt", float32)

    def exp(self) -> Tensor:
        return _float_unary(self, "exp")

    def log(self) -> Tensor:
        return _float_unary(self, "log")

    def reciprocal(self) -> Tensor:
        return _unary_result(self, 1.0 / self._f(), "reciprocal", float32)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """clamp with number bounds (the op `clamp`) or tensor bounds (maximum/minimum)."""
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            out = self
            if min is not None:
                out = out.maximum(as_tensor_like(min, self))
            return out.minimum(as_tensor_like(max, self)) if max is not None else out
        base = self if self.dtype is not bool_ else self.to(int64)
        if base.dtype is not float32 and any(isinstance(v, float) for v in (min, max)):
            base = base.float()
        node = base._n().clamp(
            min=None if min is None else float(min), max=None if max is None else float(max)
        )
        return Tensor._result(node, base.dtype, base, op="clamp")

    clip = clamp

    def maximum(self, other: Any) -> Tensor:
        return _select2("maximum", self, other)

    def minimum(self, other: Any) -> Tensor:
        return _select2("minimum", self, other)

    # -- comparisons and logic -----------------------------------------------------------------

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return _compare("eq", self, other)

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return _compare("ne", self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _compare("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return _compare("le", self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _compare("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _compare("ge", self, other)

    def eq(self, other: Any) -> Tensor:
        return _compare("eq", self, other)

    def ne(self, other: Any) -> Tensor:
        return _compare("ne", self, other)

    def lt(self, other: Any) -> Tensor:
        return _compare("lt", self, other)

    def le(self, other: Any) -> Tensor:
        return _compare("le", self, other)

    def gt(self, other: Any) -> Tensor:
        return _compare("gt", self, other)

    def ge(self, other: Any) -> Tensor:
        return _compare("ge", self, other)

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

    def equal(self, other: Tensor) -> bool:
        return tuple(self.shape) == tuple(other.shape) and bool((self == other).all())

    def logical_not(self) -> Tensor:
        return Tensor._result(self._n().cast("bool").cast("int32").eq(0), bool_, op="not")

    def __invert__(self) -> Tensor:
        if self.dtype is not bool_:
            raise refuse("Tensor.__invert__ of an integer tensor (bitwise not)", "tensor")
        return self.logical_not()

    def _logic(self, other: Any, how: str) -> Tensor:
        o = as_tensor_like(other, self)
        a, b = self._n().cast("bool").cast("float32"), o._n().cast("bool").cast("float32")
        node = {
            "and": lambda: a * b,
            "or": lambda: a.maximum(b),
            "xor": lambda: a.ne(b).cast("float32"),
        }[how]()
        return Tensor._result(node.cast("bool"), bool_, op=how)

    def logical_and(self, other: Any) -> Tensor:
        return self._logic(other, "and")

    def logical_or(self, other: Any) -> Tensor:
        return self._logic(other, "or")

    def logical_xor(self, other: Any) -> Tensor:
        return self._logic(other, "xor")

    def __and__(self, other: Any) -> Tensor:
        return self._bool_only(other, "and", "&")

    def __or__(self, other: Any) -> Tensor:
        return self._bool_only(other, "or", "|")

    def __xor__(self, other: Any) -> Tensor:
        return self._bool_only(other, "xor", "^")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def _bool_only(self, other: Any, how: str, sym: str) -> Tensor:
        if self.dtype is not bool_:
            raise refuse(f"Tensor.__{how}__ of integer tensors (bitwise {sym})", "tensor")
        return self._logic(other, how)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        """value where mask is true (mask bool, broadcast)."""
        m = _bool_mask(mask, "masked_fill")
        if isinstance(value, Tensor):
            return where(m, value.to(self.dtype), self)
        base = self if self.dtype is not bool_ else self.to(int64)
        node = _via(base._n(), "where", lambda n: GF.masked_fill(n, m._n(), value))
        out = Tensor._result(node, base.dtype, base, op="masked_fill")
        return out if self.dtype is not bool_ else out.to(bool_)

    # -- reductions ----------------------------------------------------------------------------

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        if dtype is not None:  # torch casts the input to dtype first
            return self.to(_subset_dtype(dtype)).sum(dim, keepdim)
        if self.dtype.is_floating_point:
            return _reduce(self, "sum", dim, keepdim, float32)
        out = _reduce(self.float(), "sum", dim, keepdim, float32)  # counts: exact to 2^24
        return _cast(out, int64)

    def mean(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        if dtype is not None:  # torch casts the input to dtype first
            return self.to(_subset_dtype(dtype)).mean(dim, keepdim)
        if not self.dtype.is_floating_point:
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be "
                f"floating point, got {self.dtype.name}"
            )
        return _reduce(self.float(), "mean", dim, keepdim, float32)

    def var(self, *args: Any, **kwargs: Any) -> Tensor:
        """torch's overloads: var(unbiased), var(dim, unbiased, keepdim=False),
        var(dim=None, *, correction=1, keepdim=False): sum((x - mean)^2) / (n - correction)."""
        dim, correction, keepdim = _variance_args("var", args, kwargs)
        dims = _reduce_dims(self, dim)
        n = self.numel() if dims is None else math.prod(self.shape[d] for d in dims)
        d = self.float() - self.float().mean(dim, keepdim=True)
        return (d * d).sum(dim, keepdim=keepdim) / max(n - correction, 0)

    def std(self, *args: Any, **kwargs: Any) -> Tensor:
        """The square root of var, with var's overloads."""
        dim, correction, keepdim = _variance_args("std", args, kwargs)
        return self.var(dim, keepdim=keepdim, correction=correction).sqrt()

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
        """The vector p-norm over dim (all elements by default), as torch.linalg.vector_norm:
        2 / "fro", 1, inf, -inf, 0 (the count of nonzeros, gradient 0 as torch's) and any
        other finite p (`_p_norm`); "nuc" (singular values) is refused by name."""
        if isinstance(p, bool) or not isinstance(p, int | float | str):
            raise refuse(f"Tensor.norm(p={p!r}) (a number, 'fro')", "tensor")
        if p in ("fro", 2, 2.0):
            return (self.float() * self.float()).sum(dim, keepdim=keepdim).sqrt()
        if p in (1, 1.0):
            return self.float().abs().sum(dim, keepdim=keepdim)
        if p == math.inf:
            return self.float().abs().amax(dim, keepdim=keepdim)
        if p == -math.inf:
            return self.float().abs().amin(dim, keepdim=keepdim)
        if p in (0, 0.0):  # the count of nonzeros: differentiable, its gradient 0 (as torch)
            count = Tensor._result(self.ne(0).float()._n(), float32, self, op="norm")
            return count.sum(dim, keepdim=keepdim)
        if isinstance(p, str) or math.isnan(p):
            raise refuse(f"Tensor.norm(p={p!r}) (numbers and 'fro'; 'nuc' needs an SVD)", "tensor")
        return _p_norm(self.float(), float(p), dim, keepdim)

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """max() of all elements; max(dim) -> (values, indices); max(other) elementwise."""
        return _extreme(self, dim, keepdim, "max")

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _extreme(self, dim, keepdim, "min")

    def amax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _reduce_select(self, "reduce_max", dim, keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _reduce_select(self, "reduce_min", dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _arg(self, "argmax", dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _arg(self, "argmin", dim, keepdim)

    def multinomial(
        self, num_samples: int, replacement: bool = False, *, generator: Any = None
    ) -> Tensor:
        from .sampling import multinomial

        return multinomial(self, num_samples, replacement, generator=generator)

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _reduce_select(self.bool().to(int32), "reduce_max", dim, keepdim).to(bool_)

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _reduce_select(self.bool().to(int32), "reduce_min", dim, keepdim).to(bool_)

    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return _rows(self if dtype is None else self.to(_subset_dtype(dtype)), "softmax", dim)

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(_subset_dtype(dtype))
        return _rows(x, "log_softmax", dim)

    # -- layout --------------------------------------------------------------------------------

    def reshape(self, *shape: Any) -> Tensor:
        dims = _dims(shape)
        node = _via(self._n(), "reshape", lambda n: n.reshape(dims))
        return _layout_result(self, node, "reshape")

    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], dtype):
            raise refuse("Tensor.view(dtype)", "tensor")
        return self.reshape(*shape)

    def view_as(self, other: Tensor) -> Tensor:
        return self.reshape(list(other.shape))

    reshape_as = view_as

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        node = _via(self._n(), "reshape", lambda n: GF.flatten(n, start_dim, end_dim))
        return _layout_result(self, node, "flatten")

    def unsqueeze(self, dim: int) -> Tensor:
        node = _via(self._n(), "reshape", lambda n: GF.unsqueeze(n, dim))
        return _layout_result(self, node, "unsqueeze")

    def squeeze(self, dim: Any = None) -> Tensor:
        if isinstance(dim, (list, tuple)):
            out = self
            for d in sorted((_axis(d, self.ndim) for d in dim), reverse=True):
                out = out.squeeze(d)
            return out
        if self.ndim == 0:  # a 0-dim tensor squeezes to itself (dim 0 or -1 as torch allows)
            if dim is not None:
                _axis(dim, 0)
            return self
        node = _via(self._n(), "reshape", lambda n: GF.squeeze(n, dim))
        return _layout_result(self, node, "squeeze")

    def permute(self, *dims: Any) -> Tensor:
        order = [_axis(d, self.ndim) for d in _dims(dims)]
        if sorted(order) != list(range(self.ndim)):
            raise RuntimeError(f"permute(): dims {order} are not a permutation of {self.ndim} dims")
        if order == list(range(self.ndim)):
            return self
        node = _via(self._n(), "permute", lambda n: n.permute(order))
        return _layout_result(self, node, "permute")

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        order = list(range(self.ndim))
        a, b = _axis(dim0, self.ndim), _axis(dim1, self.ndim)
        if a == b:  # a 0-dim tensor too: dims 0 / -1 name its one (absent) axis
            return self
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    swapaxes = swapdims = transpose

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self) -> Tensor:
        return self.permute(list(range(self.ndim))[::-1])

    @property
    def mT(self) -> Tensor:
        return self.transpose(-2, -1)

    def expand(self, *sizes: Any) -> Tensor:
        want = _dims(sizes)
        lead = len(want) - self.ndim
        shape = [self.shape[i - lead] if n == -1 else n for i, n in enumerate(want)]
        return _expand_to(self, shape)

    def expand_as(self, other: Tensor) -> Tensor:
        return _expand_to(self, other.shape)

    def __getitem__(self, key: Any) -> Tensor:
        return _index(self, key)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        d = _axis(dim, self.ndim)
        start = start + self.shape[d] if start < 0 else start
        if not 0 <= start <= start + length <= self.shape[d]:
            raise IndexError(
                f"narrow(): start ({start}) + length ({length}) exceeds "
                f"dimension size ({self.shape[d]})."
            )
        key = tuple([slice(None)] * d + [slice(start, start + length)])
        return self[key]

    def select(self, dim: int, index: int) -> Tensor:
        d = _axis(dim, self.ndim)
        return self[tuple([slice(None)] * d + [index])]

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        d = _axis(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
        d = _axis(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            sizes = [min(step, n - s) for s in range(0, n, step)]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to "
                    f"{n} (input tensor's size at dimension {d}), but got "
                    f"split_sizes={sizes}"
                )
        out, start = [], 0
        for size in sizes:
            out.append(self.narrow(d, start, size))
            start += size
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        n = self.shape[_axis(dim, self.ndim)]
        return self.split(max(1, -(-n // chunks)), dim)

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two axes (col <= row + diagonal), the rest 0."""
        return _triangle(self, diagonal, upper=False, name="tril")

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two axes (col >= row + diagonal), the rest 0."""
        return _triangle(self, diagonal, upper=True, name="triu")

    def flip(self, *dims: Any, **kwargs: Any) -> Tensor:
        if kwargs:  # torch.flip(x, dims=...)
            if set(kwargs) != {"dims"} or dims:
                raise TypeError(f"flip() got unexpected arguments {sorted(kwargs)}")
            dims = (kwargs["dims"],)
        axes = {_axis(d, self.ndim) for d in _dims(dims)}
        key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(self.ndim))
        return self[key]

    def index_select(self, dim: int, index: Any) -> Tensor:
        idx = _index_tensor(index, "index_select")
        if idx.ndim != 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        d = _axis(dim, self.ndim)
        node = _via(self._n(), "index_select", lambda n: n.index_select(d, idx._n()))
        return Tensor._result(node, self.dtype, self, idx, op="index_select")

    def gather(self, dim: int, index: Any) -> Tensor:
        idx = _index_tensor(index, "gather")
        d = _axis(dim, self.ndim)
        if self.ndim == 0 and idx.ndim <= 1:  # torch reads a 0-dim input as [1]
            return self.reshape(1).gather(0, idx.reshape(-1)).reshape(tuple(idx.shape))
        node = _via(self._n(), "gather", lambda n: n.gather(d, idx._n()))
        return Tensor._result(node, self.dtype, self, idx, op="gather")

    # -- sorting ---------------------------------------------------------------------------------

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool | None = False) -> Any:
        """(values, indices) sorted along dim, stably (gpulab.functional.sorting: equal
        values keep their order, as torch's CPU sort gives them; NaN last ascending); the
        values' gradient is gather's."""
        indices = _sort_order(self, dim, bool(descending), "sort")
        return values_indices(self.gather(_axis(dim, max(self.ndim, 1)), indices), indices)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
        return _sort_order(self, dim, bool(descending), "argsort")

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """The k largest (smallest) along dim, in sorted order, with their indices; equal
        values come in index order (torch's topk leaves their order open)."""
        d = _axis(dim, max(self.ndim, 1))
        size = self.shape[d] if self.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError(f"selected index k out of range: k = {k}, size {size}")
        from ..functional import selection, sorting

        too_big = self.ndim and sorting.sort_elements(list(self.shape), d) > sorting.SORT_LIMIT
        if too_big and 0 < k <= selection.MAX_K:  # k selection rounds: no n x n matrices
            return _topk_rounds(self, k, dim, largest)
        order = _sort_order(self, dim, bool(largest), "topk")
        indices = order.narrow(d, 0, k) if self.ndim else order
        return values_indices(self.gather(d, indices), indices)


def _accept_keepdims(fn: Any) -> Any:
    """fn also taking numpy's spelling `keepdims=` (torch accepts it as keepdim's alias)."""

    def wrapped(self: Tensor, *args: Any, keepdims: bool | None = None, **kwargs: Any) -> Any:
        if keepdims is not None:
            if "keepdim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both keepdim= and keepdims=")
            kwargs["keepdim"] = keepdims
        return fn(self, *args, **kwargs)

    wrapped.__name__ = wrapped.__qualname__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


for _reduction in (
    "sum",
    "mean",
    "var",
    "std",
    "norm",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "any",
    "all",
):
    setattr(Tensor, _reduction, _accept_keepdims(Tensor.__dict__[_reduction]))


# ---------------------------------------------------------------------------------------------
# helpers: operands, dtypes, results


def _subset_dtype(d: Any) -> dtype:
    """A `dtype=` argument as ours: float64 and the other absent dtypes refused by name."""
    from ._dtype import as_dtype

    return as_dtype(d)


def _is_dtype_like(a: Any) -> bool:
    """A positional argument of `to` that names a dtype: ours, PyTorch's own dtype objects
    (their repr is 'torch.<name>'), Python's float / int / bool types."""
    return isinstance(a, dtype) or a in (float, int, bool) or type(a).__name__ == "dtype"


def _sort_order(t: Tensor, dim: int, descending: bool, name: str) -> Tensor:
    """int64 indices that sort t along dim (a 0-dim tensor: [0] as torch), refused by name past
    the op library's comparison-matrix limit."""
    from ..functional import sorting

    if t.ndim == 0:
        _axis(dim, 1)
        return as_tensor_like(0)
    d = _axis(dim, t.ndim)
    size = sorting.sort_elements(list(t.shape), d)
    if size > sorting.SORT_LIMIT:
        raise refuse(
            f"Tensor.{name} over {t.shape[d]} elements along dim {dim} (its comparison "
            f"matrices hold {size} elements; at most {sorting.SORT_LIMIT})",
            "tensor",
        )
    if t.numel() == 0:
        return Tensor._result(t._f().cast("int32"), int64, op=name)
    node = sorting.stable_order(t._f(), d, descending)
    return Tensor._result(node, int64, op=name)


def _py(v: Any, dt: dtype) -> Any:
    if dt is float32:
        return float(v)
    if dt is bool_:
        return bool(v)
    return int(v)


def _nest(flat: list, shape: list[int]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = math.prod(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:.4f}"
    return repr(v)


def _axis(d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return d % n


def _dims(args: Sequence[Any]) -> list[int]:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return [int(a) for a in args[0]]
    return [int(a) for a in args]


def _fill_value(value: Any, shape: Sequence[int], dt: dtype) -> Any:
    n = math.prod(shape)
    if dt is float32:
        return array.array("f", [float(value)]) * n
    if dt is bool_:
        return [bool(value)] * n
    return array.array("i", [int(value)]) * n


def _scalar_dtype(v: Any) -> dtype:
    if isinstance(v, bool):
        return bool_
    return int64 if isinstance(v, int) else float32


def as_tensor_like(x: Any, like: Tensor | None = None) -> Tensor:
    """x as a Tensor (Python numbers and nested lists through torch.tensor)."""
    if isinstance(x, Tensor):
        return x
    from .creation import tensor

    return tensor(x)


def _operand_dtype(x: Any) -> dtype:
    return x.dtype if isinstance(x, Tensor) else _scalar_dtype(x)


def _result_dtype(a: Any, b: Any) -> dtype:
    """torch's promotion: a Python number only raises the category (int -> float)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return (
            promote(a.dtype, b.dtype) if not (a.ndim == 0) ^ (b.ndim == 0) else _dim_promote(a, b)
        )
    t, s = (a, b) if isinstance(a, Tensor) else (b, a)
    sd = _scalar_dtype(s)
    if t.dtype.is_floating_point or sd is bool_:
        return t.dtype if sd is not float32 or t.dtype.is_floating_point else float32
    if sd is float32:
        return float32
    return t.dtype if t.dtype is not bool_ else int64


def _dim_promote(a: Tensor, b: Tensor) -> dtype:
    """A 0-dim tensor beside a dimensioned one only raises the category, as torch."""
    big, small = (a, b) if a.ndim else (b, a)
    if small.dtype.is_floating_point and not big.dtype.is_floating_point:
        return float32
    if big.dtype is bool_ and small.dtype is not bool_:
        return small.dtype
    return big.dtype


def _node_as(x: Any, dt: dtype) -> Any:
    """The operand as a node of dtype's device type (a Python number stays a number)."""
    if not isinstance(x, Tensor):
        return float(x) if dt is float32 else int(x)
    n = x._n()
    return n if n.dtype == dt.device else n.cast(dt.device)


def _arith(op: str, a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: neither operand is a Tensor")
    a = a if isinstance(a, (Tensor, *Scalar)) else as_tensor_like(a)
    b = b if isinstance(b, (Tensor, *Scalar)) else as_tensor_like(b)
    dt = _result_dtype(a, b)
    if op == "div":
        dt = float32
    if dt is bool_:
        dt = int64 if op != "mul" else bool_
    calc = float32  # the protocol's add/sub/mul/div are float32: integers go through it
    node = _binary_node(op, _node_as(a, calc), _node_as(b, calc))
    if dt is not float32:
        node = node.cast(dt.device)
    return Tensor._result(node, dt, a, b, op=op)


def _select2(op: str, a: Tensor, b: Any) -> Tensor:
    b = as_tensor_like(b, a)
    dt = promote(a.dtype, b.dtype)
    calc = int32 if dt in (int64, int32, bool_) else float32
    node = _binary_node(op, _node_as(a, calc), _node_as(b, calc))
    if dt is bool_:
        node = node.cast("bool")
    return Tensor._result(node, dt, a, b, op=op)


def _compare(op: str, a: Tensor, b: Any) -> Tensor:
    dt = _result_dtype(a, b) if not isinstance(b, Tensor) else promote(a.dtype, b.dtype)
    calc = float32 if dt is float32 else int32
    node = _binary_node(op, _node_as(a, calc), _node_as(b, calc))
    return Tensor._result(node, bool_, op=op)


def _binary_node(op: str, x: Any, y: Any) -> Node:
    """g.op(op, a=x, b=y) with a Python number made a constant of the other side's dtype."""
    g = (x if isinstance(x, Node) else y).graph

    def const(v: Any, like: Node) -> Node:
        return (
            g.full([], float(v)) if like.dtype == "float32" else g.tensor(int(v), dtype=like.dtype)
        )

    if not isinstance(x, Node):
        x = const(x, y)
    if not isinstance(y, Node):
        y = const(y, x)
    return g.op(op, a=x, b=y)


def _unary_result(t: Tensor, node: Node, op: str, dt: dtype | None = None) -> Tensor:
    return Tensor._result(node, dt or t.dtype, t, op=op)


def _float_unary(t: Tensor, op: str) -> Tensor:
    return _unary_result(t, getattr(t._f(), op)(), op, float32)


def _via(node: Node, op: str, fn: Any) -> Node:
    """fn(node) where the op takes node's dtype; otherwise through the first dtype it takes
    (int32, then float32: exact for bools and integers within +-2^24) and back."""
    allowed = optable.ops()[op].get("types", {}).get("T", ["float32"])
    if node.dtype in allowed:
        return fn(node)
    calc = next(d for d in ("int32", "float32") if d in allowed)
    return fn(node.cast(calc)).cast(node.dtype)


def _cast(t: Tensor, dt: dtype) -> Tensor:
    if dt is t.dtype:
        return t
    n = t._n()
    if dt.device == n.dtype:  # int64 <-> int32: the same device words
        return Tensor._result(n, dt, t, op="to")
    if n.dtype == "float32" and dt is bool_:
        node = n.ne(0.0)  # torch: nonzero -> True, NaN -> True
        return Tensor._result(node, dt, op="to")
    return Tensor._result(n.cast(dt.device), dt, t if dt.is_floating_point else None, op="to")


def _layout_result(t: Tensor, node: Node, op: str) -> Tensor:
    return Tensor._result(node, t.dtype, t, op=op)


def _expand_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    shape = [int(n) for n in shape]
    if list(t.shape) == shape:
        return t
    node = t._n()
    lead = len(shape) - t.ndim
    if lead < 0 or any(s not in (1, n) for s, n in zip(t.shape, shape[lead:], strict=True)):
        raise RuntimeError(
            f"The expanded size of the tensor ({shape}) must match the "
            f"existing size ({list(t.shape)}) at a non-singleton dimension"
        )
    if node.dtype == "bool":
        out = GF.broadcast_to(node.cast("int32"), shape).cast("bool")
    else:
        out = GF.broadcast_to(node, shape)
    return Tensor._result(out, t.dtype, t, op="expand")


def _bool_mask(mask: Any, what: str) -> Tensor:
    m = as_tensor_like(mask)
    if m.dtype is not bool_:
        raise RuntimeError(
            f"{what} only supports boolean masks, but got mask with dtype {m.dtype.name}"
        )
    return m


def _index_tensor(index: Any, what: str) -> Tensor:
    idx = as_tensor_like(index)
    if idx.dtype not in (int64, int32):
        raise RuntimeError(f"{what}(): Expected dtype int64 for index, got {idx.dtype.name}")
    return idx


def _variance_args(name: str, args: tuple, kwargs: dict) -> tuple[Any, float, bool]:
    """(dim, correction, keepdim) of var/std as torch reads them: a bool first argument is
    `unbiased` (var(True)), else the overloads (dim, unbiased, keepdim) and (dim, *,
    correction, keepdim); unbiased and correction together are refused (TypeError), as torch does."""
    names = ("unbiased",) if args and isinstance(args[0], bool) else ("dim", "unbiased", "keepdim")
    if len(args) > len(names):
        raise TypeError(f"{name}() takes at most {len(names)} positional arguments here")
    given = dict(zip(names, args, strict=False))
    unknown = set(kwargs) - {"dim", "unbiased", "keepdim", "correction"}
    twice = set(given) & set(kwargs)
    if unknown or twice:
        raise TypeError(f"{name}() got unexpected or repeated arguments {sorted(unknown | twice)}")
    given.update(kwargs)
    if names == ("unbiased",) and set(given) - {"unbiased"}:
        raise TypeError(f"{name}(unbiased) takes no other argument")
    unbiased, correction = given.get("unbiased"), given.get("correction")
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}(): cannot specify both unbiased and correction")
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"{name}(): unbiased must be a bool, got {type(unbiased).__name__}")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dim = given.get("dim")
    if isinstance(dim, (list, tuple)) and not dim:
        dim = None  # an empty dim list reduces every axis
    return dim, correction, bool(given.get("keepdim", False))


def _reduce_dims(t: Tensor, dim: Any) -> list[int] | None:
    if dim is None:
        return None
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    return sorted({_axis(d, t.ndim) for d in dims}, reverse=True)


def _reduce(t: Tensor, op: str, dim: Any, keepdim: bool, dt: dtype) -> Tensor:
    dims = _reduce_dims(t, dim)
    node = t._n()
    if dims is None or (t.ndim == 0):
        node = node.graph.op(op, a=node)
        if keepdim and t.ndim:
            node = node.reshape([1] * t.ndim)
    else:
        for d in dims:
            node = node.graph.op(op, a=node, axis=d, keepdim=keepdim)
    return Tensor._result(node, dt, t, op=op)


def _reduce_select(t: Tensor, op: str, dim: Any, keepdim: bool) -> Tensor:
    base = t if t.dtype is not bool_ else t.to(int32)
    dims = _reduce_dims(base, dim)
    node = base._n()
    if dims is None or base.ndim == 0:
        node = node.graph.op(op, a=node)
    else:
        for d in dims:
            node = node.graph.op(op, a=node, axis=d, keepdim=keepdim)
    out = Tensor._result(node, base.dtype, base, op=op)
    return out if t.dtype is not bool_ else out.to(bool_)


def _extreme(t: Tensor, dim: Any, keepdim: bool, which: str) -> Any:
    if isinstance(dim, Tensor):
        return t.maximum(dim) if which == "max" else t.minimum(dim)
    op = "reduce_max" if which == "max" else "reduce_min"
    if dim is None:
        return _reduce_select(t, op, None, False)
    values = _reduce_select(t, op, dim, keepdim)
    indices = _arg(t, "argmax" if which == "max" else "argmin", dim, keepdim)
    return values_indices(values, indices)


def _triangle(t: Tensor, diagonal: Any, upper: bool, name: str) -> Tensor:
    if t.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"{name}(): argument 'diagonal' must be int, not {type(diagonal).__name__}")
    node = _via(t._n(), "where", lambda n: GF.triangle(n, diagonal, upper))
    return Tensor._result(node, t.dtype, t, op=name)


def _topk_rounds(t: Tensor, k: int, dim: int, largest: bool) -> Any:
    """topk by k selection rounds (gpulab.functional.selection), for an axis too long for the
    sort's comparison matrices (a language model's vocabulary); the same order as the sort."""
    from ..functional.selection import top_k

    d = _axis(dim, t.ndim)
    last = t.ndim - 1
    moved = t.transpose(d, last) if d != last else t
    values, indices = top_k(moved._f(), k, largest)
    vals = Tensor._result(values, float32, moved, op="topk")
    inds = Tensor._result(indices, int64, op="topk")
    if d != last:
        vals, inds = vals.transpose(d, last), inds.transpose(d, last)
    return values_indices(vals.to(t.dtype), inds)


def _arg(t: Tensor, op: str, dim: int | None, keepdim: bool) -> Tensor:
    base = t if t.dtype is not bool_ else t.to(int32)
    node = base._n()
    if dim is None:
        node = node.graph.op(op, a=node)
        if keepdim and t.ndim:
            node = node.reshape([1] * t.ndim)
    else:
        node = node.graph.op(op, a=node, axis=_axis(dim, t.ndim), keepdim=keepdim)
    return Tensor._result(node, int64, op=op)


def _rows(t: Tensor, op: str, dim: int) -> Tensor:
    node = t._f()
    return Tensor._result(node.graph.op(op, a=node, axis=_axis(dim, t.ndim)), float32, t, op=op)


def _index(t: Tensor, key: Any) -> Tensor:
    """Basic indexing (ints, slices, ..., None) and one integer tensor / list on an axis
    (index_select); other advanced indexing is refused by name."""
    items = key if isinstance(key, tuple) else (key,)
    tensors = [i for i, k in enumerate(items) if isinstance(k, (Tensor, list))]
    if not tensors:
        node = _via(t._n(), "slice", lambda n: n[key])
        return _layout_result(t, node, "slice")
    if len(tensors) > 1 or any(k is None or k is Ellipsis for k in items):
        raise refuse("advanced indexing with several index tensors (use gather)", "tensor")
    pos = tensors[0]
    idx = as_tensor_like(items[pos])
    if idx.dtype is bool_:
        raise refuse(
            "boolean-mask indexing (a data-dependent shape; use where/masked_fill)", "tensor"
        )
    if pos < t.ndim:  # negative indices count from the end, as torch (x[:, [-1], :])
        idx = where(idx.lt(0), idx + t.shape[pos], idx)
    if any(not (isinstance(k, slice) and k == slice(None)) for k in items[:pos]):
        head = t[tuple(k if i != pos else slice(None) for i, k in enumerate(items))]
        return head[tuple([slice(None)] * _kept_axes(items[:pos]) + [idx])]
    flat = idx.reshape(-1)
    picked = t.index_select(pos, flat)
    shape = list(t.shape[:pos]) + list(idx.shape) + list(t.shape[pos + 1 :])
    out = picked.reshape(shape)
    rest = items[pos + 1 :]
    if rest:
        out = out[tuple([slice(None)] * (pos + idx.ndim) + list(rest))]
    return out


def _kept_axes(items: Sequence[Any]) -> int:
    return sum(1 for k in items if isinstance(k, slice))


# ---------------------------------------------------------------------------------------------
# torch-level functions shared by tensor methods and the torch namespace


def matmul(a: Any, b: Any) -> Tensor:
    a, b = as_tensor_like(a), as_tensor_like(b)
    if not (a.dtype.is_floating_point and b.dtype.is_floating_point):
        raise RuntimeError(
            f"gpulab.torch matmul is float32 only, got {a.dtype.name} @ {b.dtype.name}"
        )
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    x, y = a._n(), b._n()
    if a.ndim == 1:
        x = x.reshape([1, a.shape[0]])
    if b.ndim == 1:
        y = y.reshape([b.shape[0], 1])
    node = x @ y
    shape = list(node.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-2 if b.ndim != 1 else -1)
    if list(node.shape) != shape:
        node = node.reshape(shape)
    return Tensor._result(node, float32, a, b, op="matmul")


def pow(base: Any, exponent: Any) -> Tensor:
    """x ** n for integer n (repeated products, as exact as torch's) and n = 0.5 / -0.5 / -1;
    a tensor exponent or another float power is refused by name."""
    if isinstance(exponent, Tensor) or not isinstance(base, Tensor):
        raise refuse("pow with a tensor exponent or a number base", "tensor")
    if exponent == 0.5:
        return base.sqrt()
    if exponent == -0.5:
        return base.rsqrt()
    if float(exponent).is_integer():
        n = int(exponent)
        if n == 0:
            return _expand_to(as_tensor_like(1.0 if base.dtype is float32 else 1), base.shape)
        out = _powi(base, abs(n))
        return out if n > 0 else 1.0 / out
    raise refuse(f"pow with exponent {exponent!r} (integers and +-0.5 only)", "tensor")


def _p_norm(x: Tensor, p: float, dim: Any, keepdim: bool) -> Tensor:
    """(sum |x|^p)^(1/p) for a finite p other than 0, 1, 2. Integer powers are products
    (`_powi`), 1/p = +-1, +-1/2 exact operations, others exp(y log a) (within a few float32
    ulps of the float64 value: the OpInfo lane's tolerance). Zeros never reach a log or a
    division: |x| = 0 contributes 0 (p > 0) or inf (p < 0) through `where` on a safe operand,
    and a sum of 0 or inf gives the limit, so every gradient is finite; there it is 0, as
    torch's (norm_backward masks x = 0 and norm = 0)."""
    a = x.abs()
    nonzero = a.ne(0.0)  # NaN counts as nonzero: it propagates through the power
    powered = where(nonzero, _power(where(nonzero, a, 1.0), p), 0.0 if p > 0 else math.inf)
    s = powered.sum(dim, keepdim=keepdim)
    finite = s.ne(0.0).logical_and(s.ne(math.inf))
    root = _power(where(finite, s, 1.0), 1.0 / p)
    zero_sum, inf_sum = (0.0, math.inf) if p > 0 else (math.inf, 0.0)
    return where(finite, root, where(s.eq(0.0), zero_sum, inf_sum))


def _power(a: Tensor, p: float) -> Tensor:
    """a^p for a > 0 (finite or inf), float32."""
    if p == 0.5:
        return a.sqrt()
    if p == -0.5:
        return a.rsqrt()
    if p.is_integer() and abs(p) <= 64:
        out = _powi(a, int(abs(p)))
        return out if p > 0 else 1.0 / out
    return (a.log() * p).exp()


def _powi(x: Tensor, n: int) -> Tensor:
    if n == 1:
        return x
    if n == 2:
        return x * x
    half = _powi(x, n // 2)
    sq = half * half
    return sq * x if n % 2 else sq


def where(condition: Any, input: Any, other: Any) -> Tensor:
    cond = _bool_mask(condition, "where")
    dt = (
        _result_dtype(input, other)
        if isinstance(input, Tensor) or isinstance(other, Tensor)
        else (float32 if any(isinstance(v, float) for v in (input, other)) else int64)
    )
    calc = float32 if dt is float32 else int32
    a, b = _node_as(input, calc), _node_as(other, calc)
    g = cond._n().graph
    node = g.where(cond._n(), a, b)
    if dt is bool_:
        node = node.cast("bool")
    return Tensor._result(node, dt, input, other, op="where")


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = [as_tensor_like(t) for t in tensors]
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # torch's legacy rule: a 1-D empty tensor joins anything (it is skipped)
    kept = [t for t in ts if tuple(t.shape) != (0,)]
    ts = kept or ts[:1]
    if len(ts) == 1:
        return ts[0]
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = promote(dt, t.dtype)
    d = _axis(dim, ts[0].ndim)
    calc = "float32" if dt is float32 else "int32"
    nodes = [t._n() if t._n().dtype == calc else t._n().cast(calc) for t in ts]
    g = nodes[0].graph
    while len(nodes) > 1:  # concat takes 2..8 operands: join in groups
        nodes = [
            g.concat(nodes[i : i + 8], axis=d) if len(nodes[i : i + 8]) > 1 else nodes[i]
            for i in range(0, len(nodes), 8)
        ]
    node = nodes[0] if dt is not bool_ else nodes[0].cast("bool")
    return Tensor._result(node, dt, *ts, op="cat")


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = [as_tensor_like(t) for t in tensors]
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _axis(dim, ts[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in ts], d)
