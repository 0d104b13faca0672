"""Block-quantized weights (ggml's q4_k, q6_k, q8_0 and q4_0) and fixed-point products, in numpy.

- `dequantize(raw, kind, shape)`: the float32 values of q4_k / q6_k / q8_0 / q4_0 bytes, decoded
  as ggml's `dequantize_row_*` do (every product is exact in float32, so the decode is exact;
  gguf-py's `gguf.quants.dequantize` gives the same bits: pylib/tests/test_quant.py).
- `quantize_q4_k(array)`, `quantize_q6_k(array)`: ports of ggml's reference quantizers
  `quantize_row_q4_K_ref` / `quantize_row_q6_K_ref` (ggml/src/ggml-quants.c), float32 step for
  step, vectorised over blocks (sums stay sequential: `np.add.accumulate`). gguf-py has no q4_k /
  q6_k quantizer to compare with; C compilers may contract some products into FMAs, which this
  port does not, so a block can differ from a C build's in the last bit of a scale.
- `to_fixed`, `fixed_to_float`, `matmul_fixed`: docs/protocol.md "matmul_fixed", the int64
  reference of the corpus.

The executors' kernels (cpu/kernels.py, the JS and GPU ones) follow these rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

QK = 256
BLOCK_BYTES = {"q4_k": 144, "q6_k": 210, "q8_0": 34, "q4_0": 18}
BLOCK_VALUES = {"q4_k": 256, "q6_k": 256, "q8_0": 32, "q4_0": 32}
GROUP_MAX_EPS = np.float32(1e-15)
F32 = np.float32

__all__ = [
    "BLOCK_BYTES",
    "BLOCK_VALUES",
    "dequantize",
    "dequantize_rows",
    "fixed_to_float",
    "kind_of",
    "matmul_fixed",
    "quantize",
    "quantize_q4_k",
    "quantize_q6_k",
    "tagged",
    "to_fixed",
]


# ---------------------------------------------------------------------------------------------
# decode


def blocks_of(raw: Any, kind: str) -> np.ndarray:
    """The bytes as a uint8 array [blocks, BLOCK_BYTES[kind]]."""
    flat = (
        np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
        if not isinstance(raw, np.ndarray)
        else raw.reshape(-1).view(np.uint8)
    )
    return flat.reshape(-1, BLOCK_BYTES[kind])


def _half(two: np.ndarray) -> np.ndarray:
    """Little-endian f16 bytes [..., 2] as float32 (exact: subnormals and -0 kept)."""
    return np.ascontiguousarray(two).view("<f2").astype(F32)[..., 0]


def scale_min_q4k(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 8 6-bit scales and mins of q4_k's 12 packed bytes (ggml's get_scale_min_k4)."""
    q = packed.astype(np.uint8)
    sc = np.concatenate([q[:, 0:4] & 63, (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([q[:, 4:8] & 63, (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)], axis=1)
    return sc, mn


def decode_q4_k(blocks: np.ndarray) -> np.ndarray:
    """[B, 144] -> [B, 256] float32: y = f32(d * sc) * q - f32(dmin * m)."""
    d = _half(blocks[:, 0:2])[:, None]
    dmin = _half(blocks[:, 2:4])[:, None]
    sc, mn = scale_min_q4k(blocks[:, 4:16])
    qs = blocks[:, 16:144].reshape(-1, 4, 1, 32) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)
    q = (qs & 15).reshape(-1, 8, 32).astype(F32)
    d1 = (d * sc.astype(F32))[:, :, None]
    m1 = (dmin * mn.astype(F32))[:, :, None]
    return (d1 * q - m1).reshape(-1, QK)


def decode_q6_k(blocks: np.ndarray) -> np.ndarray:
    """[B, 210] -> [B, 256] float32: y = f32(d * scale) * (q - 32)."""
    ql = blocks[:, 0:128].reshape(-1, 2, 1, 64) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)
    ql = (ql & 15).reshape(-1, 2, 4, 32)  # [B, half, t, l]: t = 0,1 low nibbles, 2,3 high
    qh = blocks[:, 128:192].reshape(-1, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(
        1, 1, 4, 1
    )
    q = (ql | ((qh & 3) << 4)).astype(np.int16) - 32  # [B, half, t, l]
    sc = blocks[:, 192:208].view(np.int8).astype(F32).reshape(-1, 2, 4, 2)  # [B, half, t, l//16]
    d = _half(blocks[:, 208:210])[:, None, None, None]
    scale = np.repeat(d * sc, 16, axis=3)  # [B, half, t, 32]
    return (scale * q.astype(F32)).reshape(-1, QK)


def decode_q8_0(blocks: np.ndarray) -> np.ndarray:
    """[B, 34] -> [B, 32] float32: y = d * q (q int8; the product is exact)."""
    d = _half(blocks[:, 0:2])[:, None]
    return d * blocks[:, 2:34].view(np.int8).astype(F32)


def decode_q4_0(blocks: np.ndarray) -> np.ndarray:
    """[B, 18] -> [B, 32] float32: y = d * (q - 8); byte j holds value j in its low nibble and
    value j + 16 in its high one."""
    d = _half(blocks[:, 0:2])[:, None]
    qs = blocks[:, 2:18]
    q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.int8) - np.int8(8)
    return d * q.astype(F32)


DECODERS = {"q4_k": decode_q4_k, "q6_k": decode_q6_k, "q8_0": decode_q8_0, "q4_0": decode_q4_0}


def dequantize(raw: Any, kind: str, shape: tuple[int, int]) -> np.ndarray:
    """The float32 [N, K] values of block-quantized bytes (ggml's decode, exact)."""
    n, k = shape
    return DECODERS[kind](blocks_of(raw, kind)).reshape(n, k)


def dequantize_rows(raw: Any, kind: str, shape: tuple[int, int], rows: Any) -> np.ndarray:
    """The float32 values of rows `rows` of a block-quantized [N, K] (only those rows decoded)."""
    n, k = shape
    per_row = k // BLOCK_VALUES[kind]
    picked = blocks_of(raw, kind).reshape(n, per_row, -1)[np.asarray(rows, dtype=np.int64)]
    return DECODERS[kind](picked.reshape(-1, BLOCK_BYTES[kind])).reshape(-1, k)


def tagged(raw: np.ndarray, kind: str) -> np.ndarray:
    """The bytes of a block-quantized tensor viewed as one record per block whose field is
    named by its kind (q4_k and q4_0 take the same bytes for the same shape, so the kernels
    tell them apart by this tag; `blocks_of` reads the bytes back)."""
    record = np.dtype([(kind, np.uint8, (BLOCK_BYTES[kind],))])
    return np.ascontiguousarray(raw).reshape(-1).view(np.uint8).view(record)


def kind_of(raw: np.ndarray) -> str:
    """The kind a `tagged` array carries."""
    names = raw.dtype.names or ()
    if len(names) != 1 or names[0] not in BLOCK_BYTES:
        raise ValueError(f"not a tagged block-quantized array (dtype {raw.dtype})")
    return names[0]


# ---------------------------------------------------------------------------------------------
# ggml's reference quantizers, float32 step for step


def _rint(x: np.ndarray) -> np.ndarray:
    """ggml's nearest_int: round half to even (for |x| < 2^22), as int64."""
    with np.errstate(invalid="ignore"):
        return np.rint(x).astype(np.int64)


def _seq_sum(terms: np.ndarray) -> np.ndarray:
    """A float32 sum in ascending index order along the last axis (C's loop, not pairwise):
    one float32 add per index over contiguous rows (np.add.accumulate along a short last
    axis took most of a 4096 x 4096 quantization's time)."""
    t = np.ascontiguousarray(np.moveaxis(terms.astype(F32, copy=False), -1, 0))
    total = t[0].copy()
    for row in t[1:]:
        total += row
    return total


def _fp16(x: np.ndarray) -> np.ndarray:
    """GGML_FP32_TO_FP16 (round to nearest even) as the 2 little-endian bytes [..., 2]."""
    with np.errstate(over="ignore"):
        return x.astype("<f2")[..., None].view(np.uint8)


def _make_qkx2_quants(
    x: np.ndarray, w: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """make_qkx2_quants (use_mad false) over rows [S, n]: (scale, the_min, L)."""
    with np.errstate(all="ignore"):
        mn = np.minimum(x.min(axis=1), F32(0))
        mx = x.max(axis=1)
        sum_w = _seq_sum(w)
        sum_x = _seq_sum(w * x)
        flat = mx == mn
        span = np.where(flat, F32(1), mx - mn)
        iscale = F32(nmax) / span
        scale = F32(1) / iscale
        lv = np.clip(_rint(iscale[:, None] * (x - mn[:, None])), 0, nmax)
        diff = scale[:, None] * lv.astype(F32) + mn[:, None] - x
        best = _seq_sum(w * (diff * diff))
        for step in range(nstep + 1):
            iscale = (F32(rmin) + F32(rdelta) * F32(step) + F32(nmax)) / span
            laux = np.clip(_rint(iscale[:, None] * (x - mn[:, None])), 0, nmax)
            lf = laux.astype(F32)
            sum_l = _seq_sum(w * lf)
            sum_l2 = _seq_sum(w * lf * lf)
            sum_xl = _seq_sum(w * lf * x)
            det = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / det
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det
            clamp = this_min > 0
            this_min = np.where(clamp, F32(0), this_min)
            this_scale = np.where(clamp, sum_xl / sum_l2, this_scale)
            diff = this_scale[:, None] * lf + this_min[:, None] - x
            cur = _seq_sum(w * (diff * diff))
            take = (det > 0) & (cur < best) & ~flat
            lv = np.where(take[:, None], laux, lv)
            best = np.where(take, cur, best)
            scale = np.where(take, this_scale, scale)
            mn = np.where(take, this_min, mn)
        scale = np.where(flat, F32(0), scale)
        lv = np.where(flat[:, None], 0, lv)
    return scale.astype(F32), (-mn).astype(F32), lv


def _f32_matrix(array: Any) -> np.ndarray:
    x = np.ascontiguousarray(np.asarray(array, dtype=F32))
    if x.ndim != 2 or x.shape[1] % QK:
        raise ValueError(
            f"quantize needs a float array [N, K] with K a multiple of {QK}, "
            f"got shape {list(x.shape)}"
        )
    return x


def quantize_q4_k(array: Any) -> bytes:
    """ggml's quantize_row_q4_K_ref on each row of a float32 [N, K] (K a multiple of 256)."""
    x = _f32_matrix(array).reshape(-1, 8, 32)  # [B, sub-block, 32]
    nb = x.shape[0]
    sub = x.reshape(-1, 32)
    with np.errstate(all="ignore"):
        av_x = np.sqrt(_seq_sum(sub * sub) / F32(32))
        weights = av_x[:, None] + np.abs(sub)
    scales, mins, lv = _make_qkx2_quants(sub, weights, 15, -1.0, 0.1, 20)
    scales, mins, lv = scales.reshape(nb, 8), mins.reshape(nb, 8), lv.reshape(nb, 8, 32)
    max_scale = np.maximum(scales.max(axis=1), F32(0))
    max_min = np.maximum(mins.max(axis=1), F32(0))
    with np.errstate(all="ignore"):
        inv_scale = np.where(max_scale > 0, F32(63) / max_scale, F32(0))
        inv_min = np.where(max_min > 0, F32(63) / max_min, F32(0))
        ls = np.minimum(_rint(inv_scale[:, None] * scales) & 0xFF, 63).astype(np.uint8)
        lm = np.minimum(_rint(inv_min[:, None] * mins) & 0xFF, 63).astype(np.uint8)
    packed = np.zeros((nb, 12), np.uint8)
    packed[:, 0:4] = ls[:, 0:4] | ((ls[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = lm[:, 0:4] | ((lm[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    d16 = _fp16(max_scale / F32(63))
    dmin16 = _fp16(max_min / F32(63))
    sc, mn = scale_min_q4k(packed)
    with np.errstate(all="ignore"):
        d = _half(d16)[:, None] * sc.astype(F32)
        dm = _half(dmin16)[:, None] * mn.astype(F32)
        requant = np.clip(_rint((x + dm[:, :, None]) / d[:, :, None]), 0, 15)
    lv = np.where((d != 0)[:, :, None], requant, lv).astype(np.uint8)
    pairs = lv.reshape(nb, 4, 2, 32)
    qs = (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).reshape(nb, 128)
    return np.concatenate([d16, dmin16, packed, qs], axis=1).astype(np.uint8).tobytes()


def _make_qx_quants(x: np.ndarray, nmax: int) -> tuple[np.ndarray, np.ndarray]:
    """make_qx_quants with rmse_type 1 and no weights over rows [S, n]: (scale, L in 0..2nmax)."""
    s = x.shape[0]
    rows = np.arange(s)
    mx = x[rows, np.argmax(np.abs(x), axis=1)]
    zero = np.abs(mx) < GROUP_MAX_EPS
    safe = np.where(zero, F32(1), mx)
    w = x * x
    with np.errstate(all="ignore"):

        def fit(iscale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            lv = np.clip(_rint(iscale[:, None] * x), -nmax, nmax - 1)
            lf = lv.astype(F32)
            return lv, _seq_sum(w * x * lf), _seq_sum(w * lf * lf)

        lv, sumlx, suml2 = fit(F32(-nmax) / safe)
        scale = np.where(suml2 != 0, sumlx / suml2, F32(0))
        best = scale * sumlx
        for step in range(-9, 10):
            if step == 0:
                continue
            iscale = -(F32(nmax) + F32(0.1) * F32(step)) / safe
            laux, sumlx, suml2 = fit(iscale)
            take = (suml2 > 0) & (sumlx * sumlx > best * suml2)
            lv = np.where(take[:, None], laux, lv)
            scale = np.where(take, sumlx / suml2, scale)
            best = np.where(take, scale * sumlx, best)
    scale = np.where(zero, F32(0), scale).astype(F32)
    return scale, np.where(zero[:, None], 0, lv + nmax)


def quantize_q6_k(array: Any) -> bytes:
    """ggml's quantize_row_q6_K_ref on each row of a float32 [N, K] (K a multiple of 256)."""
    x = _f32_matrix(array).reshape(-1, 16, 16)  # [B, sub-block, 16]
    nb = x.shape[0]
    scales, lv = _make_qx_quants(x.reshape(-1, 16), 32)
    scales, lv = scales.reshape(nb, 16), lv.reshape(nb, 16, 16)
    rows = np.arange(nb)
    max_scale = scales[rows, np.argmax(np.abs(scales), axis=1)]
    empty = np.abs(max_scale) < GROUP_MAX_EPS
    with np.errstate(all="ignore"):
        iscale = F32(-128) / np.where(empty, F32(1), max_scale)
        d16 = _fp16(F32(1) / iscale)
        sc = np.minimum(_rint(iscale[:, None] * scales), 127).astype(np.int8)
        d = _half(d16)[:, None] * sc.astype(F32)
        requant = np.clip(_rint(x / d[:, :, None]), -32, 31) + 32
    lv = np.where((d != 0)[:, :, None], requant, lv).astype(np.uint8).reshape(nb, 2, 4, 32)
    low = lv & 0xF
    ql = np.concatenate(
        [low[:, :, 0] | (low[:, :, 2] << 4), low[:, :, 1] | (low[:, :, 3] << 4)], axis=2
    ).reshape(nb, 128)
    qh = (
        (lv[:, :, 0] >> 4)
        | ((lv[:, :, 1] >> 4) << 2)
        | ((lv[:, :, 2] >> 4) << 4)
        | ((lv[:, :, 3] >> 4) << 6)
    )
    out = np.concatenate([ql, qh.reshape(nb, 64), sc.view(np.uint8), d16], axis=1)
    out[empty] = 0
    return out.astype(np.uint8).tobytes()


QUANTIZERS = {"q4_k": quantize_q4_k, "q6_k": quantize_q6_k}


def quantize(array: Any, kind: str) -> bytes:
    """quantize_q4_k or quantize_q6_k by name."""
    return QUANTIZERS[kind](array)


# ---------------------------------------------------------------------------------------------
# matmul_fixed (docs/protocol.md): fixed-point operands, 64-bit integer sums


def to_fixed(x: Any, frac_bits: int) -> np.ndarray:
    """round-half-even(x * 2^frac_bits) saturated to int32, NaN -> 0 (x float32)."""
    scaled = np.asarray(x, dtype=F32).astype(np.float64) * float(2**frac_bits)  # exact
    with np.errstate(invalid="ignore"):
        r = np.rint(np.nan_to_num(scaled, nan=0.0, posinf=2.0**40, neginf=-(2.0**40)))
    return np.clip(r, -(2**31), 2**31 - 1).astype(np.int64)


def fixed_to_float(total: np.ndarray, frac_bits: int) -> np.ndarray:
    """An int64 sum as float32: rounded once to 24 bits (half to even), scaled by 2^-2frac
    (exact: the result stays normal)."""
    return (total.astype(F32) * F32(2.0 ** (-2 * frac_bits))).astype(F32)


def matmul_fixed(a: Any, b: Any, frac_bits: int) -> np.ndarray:
    """[..., M, K] @ [..., K, N]: products of int32 fixed-point values summed in int64,
    wrapping modulo 2^64 (numpy's int64 matmul wraps), the sum rounded once."""
    qa, qb = to_fixed(a, frac_bits), to_fixed(b, frac_bits)
    with np.errstate(over="ignore"):
        total = np.matmul(qa, qb)
    return fixed_to_float(total, frac_bits)
