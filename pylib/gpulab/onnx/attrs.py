"""What each ONNX attribute must be: its type and the range of its values, checked in one place
(NodeCtx.attr) before a lowering sees the value.

A hostile model can give any attribute any type (`axis` as a string, `kernel_shape` as one int,
ConstantOfShape's `value` as an int) and any value (`blocksize` 0, `group` -1, `strides` 0). The
lowerings read attributes through `NodeCtx.attr`, which refuses a wrong type or an out-of-range
value with VALIDATION naming the node and the attribute, so no lowering meets one.

`COMMON` gives the spec of each attribute name the loader reads: ONNX uses a name with one type
and meaning across operators. An operator whose attribute of that name differs says so in its
`Op(types=...)` (Pad's `pads` may be negative, its old `value` is a float).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# An INT where a FLOAT is expected is taken as that float (onnx.helper writes `alpha=1` as an
# INT); INTS where FLOATS are expected likewise. No other type stands in for another.
WIDENS = {("FLOAT", "INT"), ("FLOATS", "INTS")}


@dataclass(frozen=True)
class Spec:
    """kind: the ONNX attribute type (INT, FLOAT, STRING, INTS, FLOATS, STRINGS, TENSOR);
    low / high: bounds of every value (ints and floats); finite: no NaN or infinity."""

    kind: str
    low: float | None = None
    high: float | None = None
    finite: bool = False

    def problem(self, value: object) -> str | None:
        """Why the value (already of the right kind) is out of range, or None."""
        many = isinstance(value, list)
        verb = "holds" if many else "is"
        for v in value if many else [value]:
            if not isinstance(v, (int, float)):
                return None  # strings and tensors: the lowering reads their content
            if self.finite and not math.isfinite(v):
                return f"must be finite, {verb} {v!r}"
            if self.low is not None and not v >= self.low:
                return f"must be >= {_num(self.low)}, {verb} {v!r}"
            if self.high is not None and not v <= self.high:
                return f"must be <= {_num(self.high)}, {verb} {v!r}"
        return None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


INT = Spec("INT")
FLOAT = Spec("FLOAT")
STRING = Spec("STRING")
INTS = Spec("INTS")
FLOATS = Spec("FLOATS")
TENSOR = Spec("TENSOR")
COUNT = Spec("INT", low=1)  # a size or count: 1 or more
SIZES = Spec("INTS", low=1)
WIDTHS = Spec("INTS", low=0)

COMMON: dict[str, Spec] = {
    # flags and small integers (any value: the lowering reads them as truth values or refuses
    # the values it does not support by name)
    **dict.fromkeys(
        (
            "keepdims",
            "select_last_index",
            "exclusive",
            "reverse",
            "transA",
            "transB",
            "broadcast",
            "allowzero",
            "upper",
            "training_mode",
            "is_test",
            "spatial",
            "detect_positive",
            "detect_negative",
            "fmod",
            "saturate",
            "to",
            "largest",
            "sorted",
            "interleaved",
            "align_corners",
            "is_causal",
            "qk_matmul_output_mode",
            "softmax_precision",
            "ignore_index",
            "ceil_mode",
            "count_include_pad",
            "storage_order",
            "antialias",
            "exclude_outside",
            "noop_with_empty_axes",
            "stash_type",
            "dtype",
            "seed",
            "value_int",
        ),
        INT,
    ),
    # axes and positions: checked against the rank where they are used
    **dict.fromkeys(
        (
            "axis",
            "batch_axis",
            "time_axis",
            "start",
            "end",
            "k",
            "left_window_size",
            "right_window_size",
        ),
        INT,
    ),
    # sizes and counts
    "blocksize": COUNT,
    "group": COUNT,
    "num_outputs": COUNT,
    "q_num_heads": COUNT,
    "kv_num_heads": COUNT,
    "p": COUNT,
    "num_heads": Spec("INT", low=0),  # 0: not given (a 4-D input carries its heads)
    "rotary_embedding_dim": Spec("INT", low=0),  # 0: the whole head
    # floats
    **dict.fromkeys(
        (
            "alpha",
            "beta",
            "gamma",
            "epsilon",
            "momentum",
            "ratio",
            "lambd",
            "bias",
            "min",
            "max",
            "scale",
            "softcap",
            "cubic_coeff_a",
            "extrapolation_value",
            "value_float",
        ),
        FLOAT,
    ),
    # strings (the lowering refuses a value it does not support, naming it)
    **dict.fromkeys(
        (
            "mode",
            "auto_pad",
            "approximate",
            "reduction",
            "padding_mode",
            "coordinate_transformation_mode",
            "nearest_mode",
            "keep_aspect_ratio_policy",
            "equation",
            "value_string",
        ),
        STRING,
    ),
    # lists
    "axes": INTS,
    "perm": INTS,
    "starts": INTS,
    "ends": INTS,
    "shape": INTS,
    "value_ints": INTS,
    "split": SIZES,
    "strides": SIZES,
    "dilations": SIZES,
    "kernel_shape": SIZES,
    "output_shape": SIZES,
    "pads": WIDTHS,  # windows (Conv, pools); Pad's own may crop (negative)
    "output_padding": WIDTHS,
    "paddings": INTS,
    "scales": Spec("FLOATS", finite=True),
    "value_floats": FLOATS,
    "value_strings": Spec("STRINGS"),
    # tensors
    "value": TENSOR,
    "sparse_value": Spec("SPARSE_TENSOR"),
}
