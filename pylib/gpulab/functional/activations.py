"""Activations: the protocol's own (relu, sigmoid, tanh, gelu) and composites of protocol ops,
each once, with its names in every frontend (library.py).

Formulas follow PyTorch's CPU kernels where torch has the function (the order of float
operations too, where it is cheap), ONNX's definition where only ONNX has it. A piecewise
function is a `where` over branches that are each finite everywhere (their arguments clamped
to where they are picked), so the gradient autograd sends through the branch not picked (0)
never meets an infinity.
"""

from __future__ import annotations

from ..errors import GpuLabError
from ..graph import Tensor
from .elementwise import expm1, log1p
from .layers import gelu_tanh, gelu_tanh_grad
from .library import declare, onnx

# torch.nn.functional.selu's constants (ONNX's defaults are these rounded to float32)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@declare(
    torch="relu",
    method="relu",
    functional="relu",
    nn="ReLU",
    inplace=True,
    aten="relu.default",
    onnx=onnx("Relu", since=6),
)
def relu(x: Tensor) -> Tensor:
    """max(x, 0) (the protocol's relu)."""
    return x.relu()


@declare(
    torch="sigmoid",
    method="sigmoid",
    functional="sigmoid",
    nn="Sigmoid",
    aten="sigmoid.default",
    onnx=onnx("Sigmoid", since=6),
)
def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) (the protocol's sigmoid)."""
    return x.sigmoid()


@declare(
    torch="tanh",
    method="tanh",
    functional="tanh",
    nn="Tanh",
    aten="tanh.default",
    onnx=onnx("Tanh", since=6),
)
def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent (the protocol's tanh)."""
    return x.tanh()


@declare(
    functional="gelu",
    nn="GELU",
    aten="gelu.default",
    onnx=onnx("Gelu", since=20, approximate="none"),
)
def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x Phi(x) (the protocol's exact-erf gelu), or torch's tanh approximation."""
    if approximate == "none":
        return x.gelu()
    if approximate == "tanh":
        return gelu_tanh(x)
    raise GpuLabError(
        "VALIDATION", f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}"
    )


@declare(aten="gelu_backward.default")
def gelu_grad(dy: Tensor, x: Tensor, approximate: str = "none") -> Tensor:
    """dy * gelu'(x), as aten's gelu_backward (the protocol's gelu_grad, or the tanh form's)."""
    if approximate == "tanh":
        return gelu_tanh_grad(x, dy)
    return x.gelu_grad(dy)


@declare(
    functional="leaky_relu",
    nn="LeakyReLU",
    inplace=True,
    aten="leaky_relu.default",
    onnx=onnx("LeakyRelu", since=6, alpha=("negative_slope", 0.01)),
)
def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else x * negative_slope."""
    return x.graph.where(x > 0.0, x, x * negative_slope)


@declare(
    torch="threshold",
    functional="threshold",
    nn="Threshold",
    inplace=True,
    aten="threshold.default",
    onnx=onnx("ThresholdedRelu", since=10, alpha=("threshold", 1.0), fixed={"value": 0.0}),
)
def threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else value (ONNX's ThresholdedRelu is value 0)."""
    return x.graph.where(x > threshold, x, value)


@declare(aten="threshold_backward.default")
def threshold_grad(dy: Tensor, x: Tensor, threshold: float) -> Tensor:
    """dy where x > threshold, else 0 (aten's threshold_backward: relu's gradient)."""
    return dy.graph.where(x <= threshold, 0.0, dy)


@declare(
    functional="elu",
    nn="ELU",
    inplace=True,
    aten="elu.default",
    onnx=onnx("Elu", since=6, alpha=1.0),
)
def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else alpha * expm1(x)."""
    return x.graph.where(x > 0.0, x, expm1(x.clamp(None, 0.0)) * alpha)


@declare(
    torch="celu",
    functional="celu",
    nn="CELU",
    inplace=True,
    aten="celu.default",
    onnx=onnx("Celu", since=12, alpha=1.0),
)
def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else alpha * expm1(x / alpha)."""
    return x.graph.where(x > 0.0, x, expm1(x.clamp(None, 0.0) / alpha) * alpha)


@declare(
    torch="selu",
    functional="selu",
    nn="SELU",
    inplace=True,
    aten="selu.default",
    onnx=onnx(
        "Selu",
        since=6,
        alpha=("alpha", 1.67326319217681884765625),
        gamma=("scale", 1.05070102214813232421875),
    ),
)
def selu(x: Tensor, alpha: float = SELU_ALPHA, scale: float = SELU_SCALE) -> Tensor:
    """scale * elu(x, alpha) with torch's (and ONNX's) constants."""
    return elu(x, alpha) * scale


@declare(
    functional="hardsigmoid",
    nn="Hardsigmoid",
    inplace=True,
    aten="hardsigmoid.default",
)
def hardsigmoid(x: Tensor) -> Tensor:
    """torch's hardsigmoid: (x + 3) / 6 clamped to [0, 1].

    0 up to x = -3, 1 from x = 3, (x + 3) / 6 between: the ends belong to the constant pieces,
    so the slope there is torch's 0."""
    g = x.graph
    return g.where(x <= -3.0, 0.0, g.where(x >= 3.0, 1.0, (x + 3.0) / 6.0))


@declare(onnx=onnx("HardSigmoid", since=6, alpha=0.2, beta=0.5))
def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """ONNX's HardSigmoid: clamp(alpha x + beta, 0, 1) (torch's hardsigmoid is alpha 1/6,
    beta 1/2, computed as (x + 3) / 6)."""
    return (x * alpha + beta).clamp(0.0, 1.0)


@declare(
    functional="hardswish",
    nn="Hardswish",
    inplace=True,
    aten="hardswish.default",
    onnx=onnx("HardSwish", since=14),
)
def hardswish(x: Tensor) -> Tensor:
    """x * clamp(x + 3, 0, 6) / 6.

    0 up to x = -3, x from x = 3, x (x + 3) / 6 between: the ends belong to the constant and
    linear pieces, so the slopes there are torch's 0 and 1."""
    g = x.graph
    return g.where(x <= -3.0, 0.0, g.where(x >= 3.0, x, x * (x + 3.0) / 6.0))


@declare(
    functional="hardtanh",
    nn="Hardtanh",
    inplace=True,
    aten="hardtanh.default",
)
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clamped to [min_val, max_val].

    The bounds belong to the constant pieces, so the slope there is torch's 0 (a clamp's
    gradient would pass there)."""
    g = x.graph
    return g.where(x <= min_val, min_val, g.where(x >= max_val, max_val, x))


@declare(aten="hardtanh_backward.default")
def hardtanh_grad(dy: Tensor, x: Tensor, min_val: float, max_val: float) -> Tensor:
    """dy where min_val < x < max_val, else 0 (aten's hardtanh_backward)."""
    g = dy.graph
    return g.where(x > min_val, g.where(x < max_val, dy, 0.0), 0.0)


@declare(functional="relu6", nn="ReLU6", inplace=True)
def relu6(x: Tensor) -> Tensor:
    """hardtanh(x, 0, 6) (torch traces F.relu6 to aten.hardtanh)."""
    return hardtanh(x, 0.0, 6.0)


@declare(functional="softsign", nn="Softsign", onnx=onnx("Softsign", since=1))
def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return x / (x.abs() + 1.0)


@declare(
    functional="softplus",
    nn="Softplus",
    aten="softplus.default",
    onnx=onnx("Softplus", since=1),
)
def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, or x where beta x > threshold (torch's form).

    Computed as max(bx, 0) + log1p(exp(-|bx|)): exp never overflows and the result keeps its
    relative accuracy where it is tiny (x = -20: 2.06e-9, where log(1 + exp(x)) gives 0)."""
    g = x.graph
    bx = x if beta == 1.0 else x * beta
    positive = bx > 0.0
    # max(bx, 0) and -|bx| by one test, so the slope at 0 is the left one's: 0 + 1/2
    top = g.where(positive, bx, 0.0)
    y = top + log1p(g.where(positive, -bx, bx).exp())
    y = y if beta == 1.0 else y / beta
    return g.where(bx > threshold, x, y)


@declare(
    functional="mish",
    nn="Mish",
    inplace=True,
    aten="mish.default",
    onnx=onnx("Mish", since=18),
)
def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return x * softplus(x).tanh()


@declare(onnx=onnx("Swish", since=24, alpha=1.0))
def swish(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x * sigmoid(alpha x) (ONNX's Swish; alpha 1 is language.silu, torch's F.silu)."""
    return x * (x if alpha == 1.0 else x * alpha).sigmoid()


@declare(onnx=onnx("Shrink", since=9, lambd=0.5, bias=0.0))
def shrink(x: Tensor, lambd: float = 0.5, bias: float = 0.0) -> Tensor:
    """ONNX's Shrink: x + bias below -lambd, x - bias above lambd, 0 between."""
    g = x.graph
    return g.where(x < -lambd, x + bias, g.where(x > lambd, x - bias, 0.0))


@declare(
    torch="hardshrink",
    method="hardshrink",
    functional="hardshrink",
    nn="Hardshrink",
)
def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (ONNX's Shrink with bias 0).

    No aten name: torch's Autograd kernel of aten.hardshrink is a Python decomposition (abs,
    le, where), so a compiled graph never holds it."""
    return shrink(x, lambd, 0.0)
