"""ONNX Attention (opsets 23+) as a composite, following onnx.reference's op_attention: heads
split from 3-D inputs, past key/value joined, grouped-query heads repeated, the scale applied to
Q and K (sqrt each), softcap, a bias from the mask (bool or float, padded to the key length),
causal and sliding-window masks built at load, gpulab.functional's masked_softmax (a row masked
everywhere is 0, as in torch's fused attention)."""

from __future__ import annotations

import array
import math

from .. import functional as F
from ..graph import Tensor
from .attrs import Spec
from .ctx import NodeCtx, Op
from .values import Value, int_range


def _heads(cx: NodeCtx, t: Tensor, heads: int, name: str) -> Tensor:
    """[B, S, H*D] -> [B, H, S, D]."""
    b, s, hidden = t.shape
    if hidden % heads:
        raise cx.invalid(f"attribute {name!r} = {heads} does not divide {hidden}")
    return t.reshape([b, s, heads, hidden // heads]).permute([0, 2, 1, 3])


def _allowed(
    sq: int, skv: int, offsets: list[int], causal: bool, left: int, right: int
) -> list[list[bool]]:
    """Per offset (one per batch, or one for all): the [sq * skv] attend flags."""
    out = []
    for off in offsets:
        flags = []
        for i in range(sq):
            for j in range(skv):
                ok = j <= i + off if causal else True
                diff = i + off - j
                if left >= 0 and diff > left:
                    ok = False
                if right >= 0 and -diff > right:
                    ok = False
                flags.append(ok)
        out.append(flags)
    return out


def _attention(cx: NodeCtx) -> list[Value]:
    g = cx.g
    q, k, v = cx.t(0), cx.t(1), cx.t(2)
    if q.dtype != "float32":
        raise cx.fail(f"inputs of type {q.dtype} (float only)")
    precision = cx.attr("softmax_precision", 1)
    if precision != 1:
        raise cx.fail(f"attribute 'softmax_precision' = {precision} (FLOAT only)")
    three_d = q.ndim == 3
    if three_d:
        hq, hkv = cx.attr("q_num_heads"), cx.attr("kv_num_heads")
        q = _heads(cx, q, hq, "q_num_heads")
        k, v = _heads(cx, k, hkv, "kv_num_heads"), _heads(cx, v, hkv, "kv_num_heads")
    elif q.ndim != 4:
        raise cx.invalid(f"Q has rank {q.ndim} (3 or 4)")
    past = cx.has(4)
    if past != cx.has(5):
        raise cx.invalid("past_key and past_value must come together")
    if past:
        k = g.concat([cx.t(4), k], axis=2)
        v = g.concat([cx.t(5), v], axis=2)
    present_k, present_v = k, v
    _b, hq, sq, d = q.shape
    skv = k.shape[2]
    scale = cx.attr("scale", 1.0 / math.sqrt(d))
    root = math.sqrt(scale)
    # masks known at load: causal, sliding window, padded keys (nonpad_kv_seqlen)
    causal = bool(cx.attr("is_causal", 0))
    left, right = cx.attr("left_window_size", -1), cx.attr("right_window_size", -1)
    nonpad = cx.ints(6, "nonpad_kv_seqlen", most=_b) if cx.has(6) else None
    if nonpad is not None and past:
        raise cx.invalid("nonpad_kv_seqlen with past_key")
    past_len = cx.v(4).shape[2] if past else 0
    offsets = [n - sq for n in nonpad] if nonpad is not None else [past_len]
    bias: Tensor | None = None
    if causal or left >= 0 or right >= 0 or nonpad is not None:
        cx.elements([len(offsets), sq, skv], "the attention mask")
        flags = _allowed(sq, skv, offsets, causal or False, left, right)
        if nonpad is not None:
            flags = [
                [ok and (idx % skv) < n for idx, ok in enumerate(f)] for f, n in zip(flags, nonpad)
            ]
        shape = [len(flags), 1, sq, skv] if len(flags) > 1 or nonpad is not None else [sq, skv]
        values = [0.0 if ok else -math.inf for f in flags for ok in f]
        bias = g.tensor(values, shape=shape)
    if cx.has(3):
        mask = cx.t(3)
        if mask.dtype == "bool":
            mask = g.where(mask, 0.0, -math.inf)
        short = skv - mask.shape[-1]
        if short > 0:
            mask = mask.pad([[0, 0]] * (mask.ndim - 1) + [[0, short]], -math.inf)
        bias = mask if bias is None else bias + mask
    # grouped-query attention: each kv head serves hq / hkv consecutive query heads
    hkv = k.shape[1]
    if hq != hkv:
        if hq % hkv:
            raise cx.invalid(f"{hq} query heads for {hkv} key heads")
        group = hq // hkv
        idx = g.tensor(array.array("i", [h // group for h in int_range(0, hq)]), dtype="int32")
        k, v = k.index_select(1, idx), v.index_select(1, idx)
    scores = (q * root) @ (k * root).transpose()
    cx.macs += scores.size * d + scores.size * v.shape[-1]
    softcap = cx.attr("softcap", 0.0)
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    qk_out = scores
    mode = cx.attr("qk_matmul_output_mode", 0)
    probs, with_bias, _ = F.masked_softmax(scores, [bias] if bias is not None else [])
    if mode == 2:
        qk_out = with_bias
    elif mode == 3:
        qk_out = probs
    elif mode not in (0, 1):
        raise cx.fail(f"attribute 'qk_matmul_output_mode' = {mode}")
    y = probs @ v
    if three_d:
        y = y.permute([0, 2, 1, 3])
        y = y.reshape([y.shape[0], y.shape[1], y.shape[2] * y.shape[3]])
    return [y, present_k, present_v, qk_out]


ATTENTION_OPS: dict[str, Op] = {
    "Attention": Op(
        _attention,
        frozenset(
            {
                "is_causal",
                "kv_num_heads",
                "q_num_heads",
                "qk_matmul_output_mode",
                "scale",
                "softcap",
                "softmax_precision",
                "left_window_size",
                "right_window_size",
            }
        ),
        (6,),
        types={"scale": Spec("FLOAT", low=0.0, finite=True)},  # its square root scales Q and K
    ),
}
