"""Compare a backend's float32 result with the float64 reference (docs/protocol.md "Tolerances").

Pass when |got - ref| <= ulps * ulp32(ref) + scale_eps * eps32 * scale + atol, with the class's
numbers from the op table. Equal NaNs and equal infinities pass. A reference beyond the float32
range expects the infinity it rounds to (or a finite value within the bound). The exact class
compares bits (any NaN equals any NaN). Errors are reported in float32 ulps of the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reference import OP_TABLE

EPS32 = float(np.finfo(np.float32).eps)
CLASSES: dict[str, dict] = OP_TABLE["tolerance_classes"]


@dataclass
class Comparison:
    """The verdict on one output tensor."""

    passed: bool
    max_ulp: float  # largest |got - ref| / ulp32(ref) over the elements (inf: non-finite mismatch)
    bad: int  # elements outside the tolerance
    worst: int  # flat index of the worst element (the first bad one when any fail)
    detail: str  # "" when passed; else the worst element, got vs want, and the allowed error
    used: float = (
        0.0  # largest |got - ref| / allowed: the share of the tolerance used (exact: 0/inf)
    )


def ulp32(ref: np.ndarray) -> np.ndarray:
    """Spacing of float32 at |ref| (the smallest subnormal at 0)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps of ref; 0 for matching non-finite values, inf for mismatches."""
    got64 = got.astype(np.float64)
    with np.errstate(all="ignore"):
        want32 = ref.astype(np.float32)
        err = np.abs(got64 - ref) / ulp32(ref)
    same_nonfinite = (np.isnan(got) & np.isnan(want32)) | (np.isinf(got) & (got == want32))
    err = np.where(same_nonfinite, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def _exact_ok(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        want32 = ref.astype(np.float32)
    same_bits = got.view(np.uint32) == want32.view(np.uint32)
    return same_bits | (np.isnan(got) & np.isnan(want32))


def _tolerance_ok(got: np.ndarray, ref: np.ndarray, scale: np.ndarray, cls: dict) -> np.ndarray:
    allowed = allowed_error(ref, scale, cls)
    with np.errstate(all="ignore"):
        want32 = ref.astype(np.float32)
        within = np.abs(got.astype(np.float64) - ref) <= allowed
    finite_ref = np.isfinite(ref)
    nan_ok = np.isnan(ref) & np.isnan(got)
    inf_ok = np.isinf(want32) & (got == want32)  # includes a finite ref that overflows float32
    finite_ok = finite_ref & np.isfinite(got) & within
    return nan_ok | inf_ok | finite_ok


def allowed_error(ref: np.ndarray, scale: np.ndarray, cls: dict) -> np.ndarray:
    """The absolute error the class allows at each element."""
    return cls["ulps"] * ulp32(ref) + cls["scale_eps"] * EPS32 * scale + cls["atol"]


def compare_ints(got: np.ndarray, ref: np.ndarray, dtype: str) -> Comparison:
    """Integer results (int32, uint32, bool) must equal the reference exactly, as integers: a
    float array (a backend that lost the dtype) fails even when its values are equal."""
    got = np.asarray(got).reshape(-1)
    if got.dtype.kind not in "iub":
        return Comparison(False, np.inf, got.size, 0, f"got {got.dtype} data, want {dtype}", np.inf)
    got = got.astype(np.int64)
    ref = np.asarray(ref).reshape(-1).astype(np.int64)
    ok = got == ref
    bad = int(np.count_nonzero(~ok))
    worst = int(np.argmax(~ok)) if bad else 0
    detail = ""
    if bad:
        detail = (
            f"{bad} of {got.size} {dtype} elements differ; first at [{worst}]: "
            f"got {int(got[worst])} want {int(ref[worst])} (exact)"
        )
    return Comparison(bad == 0, np.inf if bad else 0.0, bad, worst, detail, np.inf if bad else 0.0)


def compare(
    got: np.ndarray, ref: np.ndarray, scale: np.ndarray, tolerance: str, dtype: str = "float32"
) -> Comparison:
    """Judge `got` (same shape as ref) against the reference under a tolerance class; a
    non-float32 dtype compares integers exactly (whatever the class)."""
    if dtype != "float32":
        return compare_ints(got, ref, dtype)
    ref = np.asarray(ref, dtype=np.float64)
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), ref.shape).reshape(-1)
    got = np.asarray(got, dtype=np.float32).reshape(-1)
    ref = ref.reshape(-1)
    cls = CLASSES[tolerance]
    ok = _exact_ok(got, ref) if tolerance == "exact" else _tolerance_ok(got, ref, scale, cls)
    err = ulp_error(got, ref)
    bad = int(np.count_nonzero(~ok))
    max_ulp = float(err.max()) if err.size else 0.0
    worst = int(np.argmax(~ok)) if bad else (int(np.argmax(err)) if err.size else 0)
    detail = ""
    if bad:
        allowed = float(allowed_error(ref[worst : worst + 1], scale[worst : worst + 1], cls)[0])
        detail = (
            f"{bad} of {got.size} elements outside '{tolerance}'; first at [{worst}]: "
            f"got {float(got[worst])!r} want {float(ref[worst])!r} "
            f"(err {float(err[worst]):.3g} ulp, allowed {allowed:.3g} abs"
            f"{', bits' if tolerance == 'exact' else ''})"
        )
    return Comparison(bad == 0, max_ulp, bad, worst, detail, _used(got, ref, scale, cls, bad))


def _used(got: np.ndarray, ref: np.ndarray, scale: np.ndarray, cls: dict, bad: int) -> float:
    """Largest share of the allowed error used by an element with finite got and ref."""
    if cls["ulps"] == 0 and cls["atol"] == 0:
        return np.inf if bad else 0.0
    both = np.isfinite(ref) & np.isfinite(got)
    if not both.any():
        return np.inf if bad else 0.0
    with np.errstate(all="ignore"):
        share = np.abs(got[both].astype(np.float64) - ref[both]) / allowed_error(
            ref[both], scale[both], cls
        )
    return max(float(share.max()), np.inf if bad and share.max() <= 1 else 0.0)
