"""gpulab.torch: a pure-Python PyTorch subset that records gpulab protocol graphs.

    import gpulab.torch as torch          # natively; in the page `import torch` gives it
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()   # one graph run: forward, backward, update
    loss.item()

Tensors are lazy: operations append nodes to one gpulab.Graph; `.item()`, `.tolist()`,
`.numpy()` and `optimizer.step()` run it (docs/torch.md "Execution model"). Names outside the
subset raise gpulab.torch.Unsupported naming them. No numpy needed (Pyodide).
"""

from __future__ import annotations

from typing import Any

from . import _library, autograd, cuda, nn, optim
from ._dtype import bool_ as bool
from ._dtype import dtype, float32, int32, int64
from ._grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._random import Generator, default_generator, initial_seed, manual_seed
from ._refuse import Unsupported, refuse
from ._tape import get_backend, set_backend
from .creation import (
    BoolTensor,
    FloatTensor,
    IntTensor,
    LongTensor,
    arange,
    as_tensor,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    is_tensor,
    linspace,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from .sampling import multinomial
from .tensor import Size, Tensor, cat, device, matmul, pow, stack, where

float = float32
long = int64
int = int32
__version__ = "2.13.0+gpulab"  # the torch API it follows (the oracle's version in the tests)

concat = concatenate = cat
mm = bmm = matmul


def _method(name: str) -> Any:
    """torch.X(t, ...) as t.X(...)."""

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            input = tensor(input)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): input.{name}(...)."
    return fn


_METHODS = (
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "abs",
    "neg",
    "negative",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "softmax",
    "log_softmax",
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "any",
    "all",
    "transpose",
    "permute",
    "reshape",
    "flatten",
    "unsqueeze",
    "squeeze",
    "narrow",
    "select",
    "split",
    "chunk",
    "flip",
    "tril",
    "triu",
    "topk",
    "index_select",
    "gather",
    "masked_fill",
    "square",
    "reciprocal",
    "add",
    "sub",
    "mul",
    "div",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
    "unbind",
    "t",
    "numel",
    "var",
    "std",
    "norm",
    "sort",
    "argsort",
    "topk",
    "swapaxes",
    "equal",
)
for _name in _METHODS:
    globals()[_name] = _method(_name)
DECLARED = _library.functions("torch")  # the op library's torch.X names (gpulab.functional)
globals().update(DECLARED)


async def fetch_async(*tensors: Tensor) -> None:
    """Run the graph of pending tensors awaiting the GPU, so `item()`/`tolist()` afterwards
    need no synchronous run (in the page: works without JSPI)."""
    for t in tensors:
        await t._materialize_async()


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.{name}")


__all__ = [
    "BoolTensor",
    "FloatTensor",
    "Generator",
    "IntTensor",
    "LongTensor",
    "Size",
    "Tensor",
    "Unsupported",
    "arange",
    "as_tensor",
    "autograd",
    "bool",
    "cat",
    "channels_last",
    "channels_last_3d",
    "compile",
    "contiguous_format",
    "cuda",
    "default_generator",
    "device",
    "dtype",
    "empty",
    "enable_grad",
    "eye",
    "fetch_async",
    "float",
    "float32",
    "from_numpy",
    "full",
    "full_like",
    "get_backend",
    "inference_mode",
    "initial_seed",
    "int",
    "int32",
    "int64",
    "is_grad_enabled",
    "is_tensor",
    "linspace",
    "long",
    "manual_seed",
    "matmul",
    "memory_format",
    "multinomial",
    "nn",
    "no_grad",
    "numel",
    "ones",
    "ones_like",
    "optim",
    "pow",
    "preserve_format",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "set_backend",
    "set_grad_enabled",
    "stack",
    "tensor",
    "where",
    "zeros",
    "zeros_like",
]
__all__ += list(_METHODS)
__all__ += list(DECLARED)

# torch.compile (gpulab/torch/compile.py). Imported last and by name: importing the submodule
# binds the package attribute `compile` to the module, which this name then replaces.
from .compile import compile
