"""The frontends' one dtype map: each dtype torch or ONNX can hand us, the protocol dtype it is
held in, and which frontend takes it. `gpulab.torch` (its dtype objects), the torch.compile
backend (`torch_backend/table.py`) and the ONNX loader (`onnx/values.py`) read this table.

int64 is held as int32 (the protocol has no 64-bit integers: integers past +-2^31 wrap in
gpulab.torch; the ONNX loader range-checks its int64 constants). The ONNX-only rows are taken
only with `load(hold_32bit=True)`: DOUBLE rounded to float32, FLOAT16 exact in it, the 8- and
16-bit integers exact in int32 (their arithmetic refused, as it would not wrap at 8 or 16 bits).
BFLOAT16 stays refused: ONNX's bfloat16 results round every step to 8 bits, further than ONNX's
own rtol 1e-3 from a float32 computation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrontendDtype:
    """`name` as torch and numpy write it; `held_as` the protocol dtype; `onnx` its
    TensorProto element type; `torch` whether gpulab.torch and torch.compile take it;
    `hold_only` whether ONNX takes it only with load(hold_32bit=True); torch's other names."""

    name: str
    held_as: str
    itemsize: int
    onnx: int
    torch: bool = False
    hold_only: bool = False
    aliases: tuple[str, ...] = ()


FRONTEND_DTYPES: tuple[FrontendDtype, ...] = (
    FrontendDtype("float32", "float32", 4, onnx=1, torch=True, aliases=("float",)),
    FrontendDtype("int64", "int32", 8, onnx=7, torch=True, aliases=("long",)),
    FrontendDtype("int32", "int32", 4, onnx=6, torch=True, aliases=("int",)),
    FrontendDtype("bool", "bool", 1, onnx=9, torch=True),
    FrontendDtype("float16", "float32", 2, onnx=10, hold_only=True),
    FrontendDtype("float64", "float32", 8, onnx=11, hold_only=True),
    FrontendDtype("uint8", "int32", 1, onnx=2, hold_only=True),
    FrontendDtype("int8", "int32", 1, onnx=3, hold_only=True),
    FrontendDtype("uint16", "int32", 2, onnx=4, hold_only=True),
    FrontendDtype("int16", "int32", 2, onnx=5, hold_only=True),
)


def torch_dtypes() -> list[FrontendDtype]:
    """The dtypes gpulab.torch and the torch.compile backend take."""
    return [d for d in FRONTEND_DTYPES if d.torch]


def onnx_dtypes(hold: bool) -> dict[int, str]:
    """ONNX element type -> its protocol dtype: the ones taken always, or (hold=True) the
    ones taken only with load(hold_32bit=True)."""
    return {d.onnx: d.held_as for d in FRONTEND_DTYPES if d.hold_only == hold}
