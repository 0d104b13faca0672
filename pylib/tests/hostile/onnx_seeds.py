"""One small valid model per operator of gpulab.onnx's table (and per opset where an attribute
became an input, so both readings are fuzzed): the seeds the attribute fuzzer mutates.

A seed is one node; its inputs are graph inputs (`In`: a shape and an element type) or
initializers (`Init`: values known at load, the operands a lowering reads at load). Every seed
loads cleanly (test_onnx_fuzz.py checks it), so a mutation is refused for what it changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


@dataclass(frozen=True)
class In:
    shape: tuple[int, ...] = (2, 3, 4)
    elem: int = F


@dataclass(frozen=True)
class Init:
    values: Any
    dtype: Any = np.int64

    def array(self) -> np.ndarray:
        return np.asarray(self.values, self.dtype)


@dataclass(frozen=True)
class Seed:
    op: str
    inputs: tuple[In | Init | None, ...] = (In(),)
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 13
    outputs: int = 1

    @property
    def label(self) -> str:
        return f"{self.op}@{self.opset}"

    def input_names(self) -> list[str]:
        return [f"in{i}" if spec is not None else "" for i, spec in enumerate(self.inputs)]

    def initializers(self) -> dict[str, np.ndarray]:
        return {
            f"in{i}": spec.array() for i, spec in enumerate(self.inputs) if isinstance(spec, Init)
        }

    def model(
        self,
        attrs: dict[str, Any] | None = None,
        inits: dict[str, np.ndarray] | None = None,
    ) -> bytes:
        """The seed's model bytes, its attributes replaced by `attrs` (name -> value, or an
        AttributeProto) and its initializers by `inits`."""
        node = helper.make_node(
            self.op, self.input_names(), [f"out{k}" for k in range(self.outputs)]
        )
        for name, value in (self.attrs if attrs is None else attrs).items():
            node.attribute.append(
                value if isinstance(value, AttributeProto) else helper.make_attribute(name, value)
            )
        values = self.initializers() if inits is None else inits
        graph_inputs = [
            helper.make_tensor_value_info(f"in{i}", spec.elem, list(spec.shape))
            for i, spec in enumerate(self.inputs)
            if isinstance(spec, In)
        ]
        graph = helper.make_graph(
            [node],
            "seed",
            graph_inputs,
            [helper.make_tensor_value_info(f"out{k}", F, None) for k in range(self.outputs)],
            [numpy_helper.from_array(v, name) for name, v in values.items()],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        return model.SerializeToString()


def _f(*shape: int) -> In:
    return In(shape, F)


def _i(*shape: int) -> In:
    return In(shape, I64)


def _b(*shape: int) -> In:
    return In(shape, B)


def _ints(*values: int) -> Init:
    return Init(list(values))


def _floats(*values: float) -> Init:
    return Init(list(values), np.float32)


UNARY = [
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Ceil",
    "Cos",
    "Cosh",
    "Erf",
    "Exp",
    "Floor",
    "IsNaN",
    "Log",
    "Neg",
    "Reciprocal",
    "Relu",
    "Round",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Tan",
    "Tanh",
    "Identity",
]
BINARY = [
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "PRelu",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
]

SEEDS: list[Seed] = [
    *(Seed(op) for op in UNARY),
    *(Seed(op, (_f(2, 3, 4), _f(2, 3, 4))) for op in BINARY),
    *(Seed(op, (_b(2, 3), _b(2, 3))) for op in ("And", "Or", "Xor")),
    Seed("Not", (_b(2, 3),)),
    Seed("Where", (_b(2, 3), _f(2, 3), _f(2, 3))),
    Seed("Mod", (_f(2, 3), _f(2, 3)), {"fmod": 1}),
    Seed("MatMul", (_f(2, 3), _f(3, 4))),
    Seed("IsInf", attrs={"detect_positive": 1, "detect_negative": 0}, opset=10),
    Seed("LeakyRelu", attrs={"alpha": 0.1}),
    Seed("Elu", attrs={"alpha": 1.0}),
    Seed("Celu", attrs={"alpha": 1.0}),
    Seed("Selu", attrs={"alpha": 1.6, "gamma": 1.05}),
    Seed("ThresholdedRelu", attrs={"alpha": 1.0}, opset=10),
    Seed("HardSigmoid", attrs={"alpha": 0.2, "beta": 0.5}),
    Seed("Shrink", attrs={"lambd": 0.5, "bias": 0.0}),
    Seed("Gelu", attrs={"approximate": "tanh"}, opset=20),
    Seed("HardSwish", opset=14),
    Seed("Mish", opset=18),
    Seed("Swish", attrs={"alpha": 1.0}, opset=24),
    Seed("SwiGLU", (_f(2, 3), _f(2, 3)), {"alpha": 1.0}, opset=24),
    *(Seed(op, attrs={"axis": 1}) for op in ("Softmax", "LogSoftmax", "Hardmax")),
    *(Seed(op, attrs={"axis": 1}, opset=11) for op in ("Softmax", "LogSoftmax", "Hardmax")),
    *(
        Seed(op, attrs={"axis": 1, "keepdims": 1, "select_last_index": 1})
        for op in ("ArgMax", "ArgMin")
    ),
    *(
        Seed(op, (_f(2, 3, 4), _ints(1)), {"keepdims": 1, "noop_with_empty_axes": 0}, opset=18)
        for op in [
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSum",
            "ReduceSumSquare",
        ]
    ),
    Seed("ReduceMean", attrs={"axes": [1], "keepdims": 0}, opset=13),
    Seed("ReduceSum", attrs={"axes": [1], "keepdims": 0}, opset=11),
    Seed("Cast", (_f(2, 3),), {"to": TensorProto.INT32, "saturate": 1}, opset=19),
    Seed("CastLike", (_f(2, 3), _i(2)), {"saturate": 1}, opset=19),
    Seed("Clip", (_f(2, 3), _floats(-1.0), _floats(1.0))),
    Seed("Clip", (_f(2, 3),), {"min": -1.0, "max": 1.0}, opset=9),
    Seed("Concat", (_f(2, 3), _f(1, 3)), {"axis": 0}),
    Seed("Constant", (), {"value": helper.make_tensor("v", F, [2], [1.0, 2.0])}),
    Seed("Constant", (), {"value_ints": [1, 2, 3]}),
    Seed("Constant", (), {"value_floats": [1.0, 2.0]}),
    Seed("ConstantOfShape", (_ints(2, 3),), {"value": helper.make_tensor("v", F, [1], [1.5])}),
    Seed(
        "Conv",
        (_f(1, 2, 5, 5), Init(np.ones((4, 2, 3, 3)), np.float32), Init(np.ones(4), np.float32)),
        {
            "kernel_shape": [3, 3],
            "strides": [1, 1],
            "pads": [1, 1, 1, 1],
            "dilations": [1, 1],
            "group": 1,
            "auto_pad": "NOTSET",
        },
    ),
    Seed(
        "ConvTranspose",
        (_f(1, 2, 3, 3), Init(np.ones((2, 3, 2, 2)), np.float32)),
        {
            "strides": [2, 2],
            "pads": [0, 0, 1, 1],
            "dilations": [1, 1],
            "output_padding": [1, 1],
            "group": 1,
            "kernel_shape": [2, 2],
        },
    ),
    Seed(
        "ConvTranspose",
        (_f(1, 2, 3, 3), Init(np.ones((2, 3, 2, 2)), np.float32)),
        {"strides": [2, 2], "output_shape": [6, 6], "auto_pad": "SAME_UPPER"},
        opset=11,
    ),
    *(
        Seed(
            op,
            (_f(1, 1, 5, 5),),
            {
                "kernel_shape": [2, 2],
                "strides": [1, 2],
                "pads": [0, 0, 1, 1],
                "dilations": [1, 1],
                "ceil_mode": 0,
                "auto_pad": "NOTSET",
                **extra,
            },
            opset=19,
        )
        for op, extra in (
            ("MaxPool", {"storage_order": 0}),
            ("AveragePool", {"count_include_pad": 1}),
            ("LpPool", {"p": 2}),
        )
    ),
    Seed("GlobalAveragePool", (_f(1, 2, 3, 3),)),
    Seed("GlobalMaxPool", (_f(1, 2, 3, 3),)),
    Seed(
        "BatchNormalization",
        (_f(1, 2, 3, 3), *(Init([1.0, 2.0], np.float32) for _ in range(4))),
        {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0},
        opset=15,
    ),
    Seed(
        "InstanceNormalization",
        (_f(1, 2, 3, 3), _floats(1.0, 2.0), _floats(0.0, 1.0)),
        {"epsilon": 1e-5},
    ),
    Seed(
        "LayerNormalization",
        (_f(2, 3, 4), Init(np.ones(4), np.float32), Init(np.zeros(4), np.float32)),
        {"axis": -1, "epsilon": 1e-5, "stash_type": 1},
        opset=17,
    ),
    Seed(
        "RMSNormalization",
        (_f(2, 3, 4), Init(np.ones(4), np.float32)),
        {"axis": -1, "epsilon": 1e-5, "stash_type": 1},
        opset=23,
    ),
    Seed("LpNormalization", (_f(2, 3),), {"axis": 1, "p": 2}),
    Seed("CumSum", (_f(2, 3), Init(1)), {"exclusive": 1, "reverse": 1}, opset=14),
    Seed("CumProd", (_f(2, 3), Init(1)), {"exclusive": 0, "reverse": 0}, opset=26),
    Seed("DepthToSpace", (_f(1, 4, 2, 2),), {"blocksize": 2, "mode": "CRD"}),
    Seed("SpaceToDepth", (_f(1, 1, 4, 4),), {"blocksize": 2}),
    Seed("Dropout", (_f(2, 3), _floats(0.5)), {"seed": 1}, outputs=2),
    Seed("Dropout", (_f(2, 3),), {"ratio": 0.5, "is_test": 1}, opset=7),
    Seed("Einsum", (_f(2, 3), _f(3, 4)), {"equation": "ij,jk->ik"}, opset=12),
    Seed("Expand", (_f(3, 1), _ints(2, 3, 4))),
    Seed("EyeLike", (_f(3, 4),), {"k": 1, "dtype": TensorProto.FLOAT}),
    Seed("Flatten", (_f(2, 3, 4),), {"axis": 1}),
    Seed("Gather", (_f(3, 4), _ints(0, 2)), {"axis": 0}),
    Seed("Gather", (Init(np.arange(12).reshape(3, 4)), _ints(0, 2)), {"axis": 1}),
    Seed("GatherElements", (_f(2, 3), Init([[0, 1, 2], [2, 1, 0]])), {"axis": 1}),
    Seed(
        "Gemm",
        (_f(3, 2), _f(3, 4), Init(np.ones(4), np.float32)),
        {"alpha": 1.0, "beta": 1.0, "transA": 1, "transB": 0},
    ),
    Seed(
        "GridSample",
        (_f(1, 1, 3, 3), _f(1, 2, 2, 2)),
        {"mode": "bilinear", "padding_mode": "zeros", "align_corners": 0},
        opset=16,
    ),
    Seed(
        "NegativeLogLikelihoodLoss",
        (_f(2, 3), _i(2)),
        {"reduction": "mean", "ignore_index": 1},
    ),
    Seed(
        "SoftmaxCrossEntropyLoss",
        (_f(2, 3), _i(2)),
        {"reduction": "sum", "ignore_index": 0},
        outputs=2,
    ),
    Seed("OneHot", (_i(3), Init(4), _floats(0.0, 1.0)), {"axis": -1}, opset=11),
    Seed("Pad", (_f(2, 3), _ints(0, 1, 0, 1), _floats(0.0)), {"mode": "constant"}),
    Seed("Pad", (_f(2, 3),), {"mode": "constant", "pads": [0, 1, 0, -1], "value": 1.0}, opset=9),
    Seed("Range", (Init(0), Init(5), Init(1)), opset=11),
    Seed("Range", (Init(0.0, np.float32), Init(2.0, np.float32), Init(0.5, np.float32)), opset=11),
    Seed("Reshape", (_f(2, 3, 4), _ints(4, -1)), {"allowzero": 0}, opset=14),
    Seed(
        "Resize",
        (_f(1, 1, 2, 2), None, _floats(1.0, 1.0, 2.0, 1.5)),
        {
            "mode": "linear",
            "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "floor",
            "cubic_coeff_a": -0.75,
            "exclude_outside": 0,
            "antialias": 0,
            "extrapolation_value": 0.0,
        },
        opset=18,
    ),
    Seed(
        "Resize",
        (_f(1, 1, 2, 2), None, None, _ints(3, 5)),
        {"mode": "cubic", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
        opset=18,
    ),
    Seed("ReverseSequence", (_f(4, 2), _i(2)), {"batch_axis": 1, "time_axis": 0}, opset=10),
    Seed(
        "RotaryEmbedding",
        (_f(1, 2, 3, 4), _f(1, 3, 2), _f(1, 3, 2)),
        {"interleaved": 1, "rotary_embedding_dim": 4},
        opset=23,
    ),
    Seed(
        "RotaryEmbedding",
        (_f(1, 3, 8), _f(1, 3, 2), _f(1, 3, 2)),
        {"interleaved": 0, "num_heads": 2},
        opset=23,
    ),
    Seed(
        "Attention",
        (_f(1, 3, 8), _f(1, 3, 8), _f(1, 3, 8)),
        {
            "q_num_heads": 2,
            "kv_num_heads": 2,
            "is_causal": 1,
            "scale": 0.5,
            "softcap": 0.0,
            "qk_matmul_output_mode": 0,
            "softmax_precision": 1,
        },
        opset=23,
    ),
    Seed(
        "Attention",
        (_f(1, 2, 3, 4), _f(1, 1, 3, 4), _f(1, 1, 3, 4)),
        {"left_window_size": 1, "right_window_size": 0},
        opset=24,
    ),
    Seed("Scatter", (_f(3, 3), Init([[1, 0, 2]]), _f(1, 3)), {"axis": 0}, opset=9),
    Seed(
        "ScatterElements",
        (_f(3, 3), Init([[1, 0, 2]]), _f(1, 3)),
        {"axis": 0, "reduction": "add"},
        opset=16,
    ),
    Seed("Shape", (_f(2, 3, 4),), {"start": 1, "end": 3}, opset=15),
    Seed("Size", (_f(2, 3),)),
    Seed("Slice", (_f(3, 4), _ints(0, 1), _ints(2, 3), _ints(0, 1), _ints(1, 1))),
    Seed("Slice", (_f(3, 4),), {"starts": [0, 1], "ends": [2, 3], "axes": [0, 1]}, opset=9),
    Seed("Split", (_f(4, 2),), {"axis": 0, "num_outputs": 2}, opset=18, outputs=2),
    Seed("Split", (_f(4, 2), _ints(1, 3)), {"axis": 0}, outputs=2),
    Seed("Split", (_f(4, 2),), {"axis": 0, "split": [3, 1]}, opset=11, outputs=2),
    Seed("Squeeze", (_f(2, 1, 3), _ints(1))),
    Seed("Squeeze", (_f(2, 1, 3),), {"axes": [1]}, opset=11),
    Seed("Unsqueeze", (_f(2, 3), _ints(0))),
    Seed("Unsqueeze", (_f(2, 3),), {"axes": [0, 3]}, opset=11),
    Seed("Tile", (_f(2, 3), _ints(2, 1))),
    Seed(
        "TopK", (_f(2, 5), _ints(2)), {"axis": -1, "largest": 1, "sorted": 1}, opset=11, outputs=2
    ),
    Seed("Transpose", (_f(2, 3, 4),), {"perm": [2, 0, 1]}),
    Seed("Trilu", (_f(3, 4), Init(1)), {"upper": 0}, opset=14),
    Seed("Upsample", (_f(1, 1, 2, 2), _floats(1.0, 1.0, 2.0, 3.0)), {"mode": "nearest"}, opset=9),
    Seed(
        "Upsample", (_f(1, 1, 2, 2),), {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 2.0]}, opset=7
    ),
    Seed("CenterCropPad", (_f(4, 5), _ints(3, 6)), {"axes": [0, 1]}, opset=18),
    Seed("Compress", (_f(3, 2), Init([True, False, True], np.bool_)), {"axis": 0}, opset=11),
]
