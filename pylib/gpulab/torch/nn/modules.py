"""torch.nn modules of the subset: Module, Parameter, Linear, the containers (Sequential,
ModuleList, ModuleDict, ParameterList, ParameterDict), Dropout, Embedding, LayerNorm,
convolution and pooling, the losses, and a module for each op the op library declares an `nn`
name for (`DECLARED`: ReLU, GELU, ELU, ...)."""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any, Self

from ...functional import Entry
from .. import _library, creation
from .._dtype import float32
from .._random import pick
from .._refuse import refuse
from ..tensor import Tensor
from . import functional as F


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and a Module registers."""

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Self:
        src = (
            data
            if isinstance(data, Tensor)
            else creation.tensor([] if data is None else data, dtype=float32)
        )
        values = src._values()
        p = cls._leaf_of(values, src.shape, src.dtype, requires_grad)
        return p  # type: ignore[return-value]

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _uniform(shape: list[int], bound: float) -> Tensor:
    """U(-bound, bound) from our stream (the distribution of torch's default init, not its
    numbers: fixtures load their weights)."""
    shape = creation.size_of("empty", shape)  # torch's errors, the element limit: first
    u = pick(None).uniforms(math.prod(shape))
    return Tensor._leaf_of(
        creation.pack([(2.0 * v - 1.0) * bound for v in u], float32), shape, float32
    )


class Module:
    """torch.nn.Module: parameters, submodules and buffers by attribute, train/eval,
    state_dict/load_state_dict (plain nested lists, or anything with tolist())."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        if name in self._buffers and (value is None or type(value) is Tensor):
            self._buffers[name] = value  # a buffer stays a buffer (torch's rule)
            return
        for table in (self._parameters, self._modules, self._buffers):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_modules", "_buffers"):
            if table in d and name in d[table]:
                return d[table][name]
        if name.startswith("__") or name in ("_parameters", "_modules", "_buffers"):
            raise AttributeError(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._modules, self._buffers):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is None:
            object.__setattr__(self, name, None)
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._buffers[name] = tensor
        if not persistent:  # kept out of state_dict, as torch does
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module

    register_module = add_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- traversal ---------------------------------------------------------------------------

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        yield from self._named_modules(prefix, seen)

    def _named_modules(self, prefix: str, seen: set[int]) -> Iterator[tuple[str, Module]]:
        if id(self) in seen:
            return
        seen.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m._named_modules(f"{prefix}.{name}" if prefix else name, seen)

    def modules(self) -> Iterator[Module]:
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self) -> Iterator[Module]:
        return (m for _, m in self.named_children())

    def named_parameters(
        self, prefix: str = "", recurse: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mname, m in mods:
            for pname, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mname}.{pname}" if mname else pname), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for mname, m in self.named_modules(prefix):
            for bname, b in m._buffers.items():
                if b is not None:
                    yield (f"{mname}.{bname}" if mname else bname), b

    def buffers(self) -> Iterator[Tensor]:
        return (b for _, b in self.named_buffers())

    def apply(self, fn: Any) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes ---------------------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else creation.zeros_like(p.grad)

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """A device or float32 changes nothing (there is one device); other dtypes refuse."""
        for a in list(args) + list(kwargs.values()):
            if hasattr(a, "is_floating_point") and a is not float32:
                raise refuse(f"Module.to({a!r})", "nn")
        return self

    def cpu(self) -> Module:
        return self

    def float(self) -> Module:
        return self

    def cuda(self, *args: Any) -> Module:
        raise refuse("Module.cuda (the device is gpulab's: no .cuda() needed)", "nn")

    # -- state ---------------------------------------------------------------------------------

    def _state_entries(self, prefix: str = "") -> Iterator[tuple[str, Tensor, bool]]:
        """(key, tensor, is_parameter) in torch's state_dict order: each module's parameters,
        then its persistent buffers, then its children's, by path (a module or parameter
        registered under two names appears under both, as in torch)."""
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, p, True
        for name, b in self._buffers.items():
            if b is not None and name not in self.__dict__.get("_non_persistent", ()):
                yield prefix + name, b, False
        for name, m in self._modules.items():
            if m is not None:
                yield from m._state_entries(f"{prefix}{name}.")

    def state_dict(self) -> OrderedDict[str, Tensor]:
        """name -> tensor, as torch orders and names them; `{k: v.tolist()}` gives plain lists."""
        return OrderedDict(
            (key, t.detach() if is_param else t) for key, t, is_param in self._state_entries()
        )

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> Any:
        """Set each parameter's values from a tensor, a nested list, or anything with
        tolist() (numpy, real torch tensors); shapes must match."""
        own = {key: t for key, t, _ in self._state_entries()}
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}: "
                f"missing keys {missing}, unexpected keys {unexpected}"
            )
        for name, value in state_dict.items():
            if name not in own:
                continue
            src = value if isinstance(value, Tensor) else creation.tensor(value, dtype=float32)
            p = own[name]
            if tuple(src.shape) != tuple(p.shape):
                raise RuntimeError(
                    f"size mismatch for {name}: copying a param with shape "
                    f"{list(src.shape)}, the shape in current model is "
                    f"{list(p.shape)}."
                )
            kept = src.float() if p.dtype is float32 else src.to(p.dtype)  # int buffers stay int
            p._value, p._node, p._rec = kept._values(), None, None
            p._version += 1
        return _Keys(missing, unexpected)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({n}): {m!r}".replace("\n", "\n  ") for n, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not lines else head + "\n  " + "\n  ".join(lines) + "\n)"


class _Keys(tuple):
    def __new__(cls, missing: list[str], unexpected: list[str]) -> Self:
        t = super().__new__(cls, (missing, unexpected))
        t.missing_keys, t.unexpected_keys = missing, unexpected  # type: ignore[attr-defined]
        return t


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x @ W.T + b; W [out, in], b [out]; initialised U(-1/sqrt(in), 1/sqrt(in)) from our
    stream (torch's distribution, not its numbers)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        creation.size_of("empty", [out_features, in_features])  # before the bound's sqrt
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = Parameter(_uniform([out_features, in_features], bound))
        if bias:
            self.bias = Parameter(_uniform([out_features], bound))
        else:
            self.register_parameter("bias", None)
            object.__setattr__(self, "bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Sequential(Module):
    def __init__(self, *mods: Any) -> None:
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], OrderedDict):
            for name, m in mods[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(mods):
                self.add_module(str(i), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: Any) -> Any:
        items = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*items[i])
        return items[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, m: Module) -> Sequential:
        self.add_module(str(len(self._modules)), m)
        return self


class ModuleList(Module):
    def __init__(self, mods: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in mods or ():
            self.append(m)

    def append(self, m: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), m)
        return self

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """Submodules by name, registered in insertion order (state_dict keys `name.param`)."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def update(self, modules: Any) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module


class ParameterList(Module):
    """Parameters by position (state_dict keys `0`, `1`, ...); tensors given are wrapped as
    Parameters, as torch does."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value: Any) -> ParameterList:
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i: int) -> Parameter:
        return list(self._parameters.values())[i]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())


class ParameterDict(Module):
    """Parameters by name (state_dict keys are the names); tensors given become Parameters."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self) -> Any:
        return self._parameters.keys()

    def items(self) -> Any:
        return self._parameters.items()

    def values(self) -> Any:
        return self._parameters.values()

    def update(self, parameters: Any) -> None:
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value


def _as_parameter(value: Any) -> Parameter:
    return value if isinstance(value, Parameter) else Parameter(value)


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Counter-hash dropout (F.dropout): active in train(), the identity in eval()."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


class Embedding(Module):
    """weight [num_embeddings, embedding_dim], initialised N(0, 1) from our stream."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        _weight: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = None
        if padding_idx is not None:
            self.padding_idx = F._padding_row(padding_idx, num_embeddings)
        w = _weight if _weight is not None else creation.randn(num_embeddings, embedding_dim)
        if _weight is None and self.padding_idx is not None:  # torch zeroes the padding row
            keep = [[0.0 if r == self.padding_idx else 1.0] for r in range(num_embeddings)]
            w = w * creation.tensor(keep)
        self.weight = Parameter(w)

    def forward(self, idx: Tensor) -> Tensor:
        return F.embedding(idx, self.weight, self.padding_idx)


class LayerNorm(Module):
    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.normalized_shape, self.eps = tuple(shape), eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(shape))
            if bias:
                self.bias = Parameter(creation.zeros(shape))
            else:
                object.__setattr__(self, "bias", None)
        else:
            object.__setattr__(self, "weight", None)
            object.__setattr__(self, "bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class _BatchNorm(Module):
    """torch.nn.BatchNorm{1,2,3}d: weight (ones) and bias (zeros) [C] when affine; buffers
    running_mean (zeros), running_var (ones) and num_batches_tracked when tracking; training
    uses the batch's statistics and updates the running ones (momentum None: the cumulative
    average, 1 / num_batches_tracked), eval the running ones (F.batch_norm)."""

    ranks: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(creation.ones(num_features))
            self.bias = Parameter(creation.zeros(num_features))
        else:
            object.__setattr__(self, "weight", None)
            object.__setattr__(self, "bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features))
            self.register_buffer("running_var", creation.ones(num_features))
            self.register_buffer("num_batches_tracked", creation.tensor(0))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self.ranks:
            ranks = " or ".join(f"{r}D" for r in self.ranks)
            raise ValueError(f"expected {ranks} input (got {x.ndim}D input)")
        if x.shape[1] != self.num_features:
            raise RuntimeError(
                f"running_mean should contain {x.shape[1]} elements not {self.num_features}"
            )
        tracking = self.track_running_stats and self.running_mean is not None
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and tracking:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / int(self.num_batches_tracked.item())
        use_batch = self.training or not tracking
        return F.batch_norm(
            x,
            self.running_mean if tracking else None,
            self.running_var if tracking else None,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    ranks = (4,)


class BatchNorm3d(_BatchNorm):
    ranks = (5,)


class Conv2d(Module):
    """F.conv2d with weight [out, in / groups, kH, kW] and bias [out], initialised
    U(+-1/sqrt(fan_in)) from our stream (torch's distribution, not its numbers)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise refuse(f"nn.Conv2d(padding_mode={padding_mode!r})", "nn")
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in = in_channels // groups * kh * kw
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = Parameter(_uniform([out_channels, in_channels // groups, kh, kw], bound))
        if bias:
            self.bias = Parameter(_uniform([out_channels], bound))
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class MaxPool2d(Module):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.args = (kernel_size, stride, padding, dilation, ceil_mode, return_indices)

    def forward(self, x: Tensor) -> Tensor:
        k, s, p, d, c, r = self.args
        return F.max_pool2d(x, k, s, p, d, c, r)


class AvgPool2d(Module):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, *self.args)


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


class Upsample(Module):
    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.args = (size, scale_factor, mode, align_corners, recompute_scale_factor)

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, *self.args)


class CrossEntropyLoss(Module):
    def __init__(
        self,
        weight: Any = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.weight, self.reduction, self.label_smoothing = weight, reduction, label_smoothing
        if weight is not None or label_smoothing:
            raise refuse("nn.CrossEntropyLoss(weight=..., label_smoothing=...)", "nn")

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, reduction=self.reduction)


class MSELoss(Module):
    def __init__(self, reduction: str = "mean", **kwargs: Any) -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(Module):
    def __init__(self, reduction: str = "mean", **kwargs: Any) -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, reduction=self.reduction)


# -- modules of the op library's declarations ---------------------------------------------------


def _declared_module(name: str, entry: Entry, fn: Any) -> type[Module]:
    """nn.<name>: the constructor takes the function's keywords (and `inplace` where torch's
    takes it), forward(input) calls the functional form with them."""
    params = [p.replace(annotation=p.empty) for p in entry.keywords()]
    if entry.inplace:
        params.append(inspect.Parameter("inplace", _library.ANY, default=False))
    sig = inspect.Signature(params)
    keys = [p.name for p in params]

    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"nn.{name}(): {err}") from None
        bound.apply_defaults()
        for key, value in bound.arguments.items():
            setattr(self, key, value)

    def forward(self: Module, input: Tensor) -> Tensor:
        return fn(input, **{k: getattr(self, k) for k in keys})

    def extra_repr(self: Module) -> str:
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in keys)

    doc = f"torch.nn.{name}{sig}: forward is gpulab.functional.{entry.name}. {entry.doc}"
    return type(
        name,
        (Module,),
        {"__init__": __init__, "forward": forward, "extra_repr": extra_repr, "__doc__": doc},
    )


DECLARED: dict[str, type[Module]] = {
    name: _declared_module(name, entry, fn) for name, (entry, fn) in _library.modules().items()
}
globals().update(DECLARED)
