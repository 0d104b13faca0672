"""torch.multinomial over gpulab.torch's random stream (not torch's numbers): the Gumbel-max
draw. Each category i of a row gets key log(w_i) + G_i with G_i = -log(-log(u_i)) from the
generator's uniforms; the largest key is a draw with probability w_i / sum(w) (zero weights
never win), and the k largest keys are k draws without replacement (Gumbel-top-k), so the
draw is an argmax or a top_k of the op library, never a host loop over categories.

The weights are checked as torch checks them (no negative, inf or NaN; a positive sum per row)
before a draw is returned: that check reads one flag back."""

from __future__ import annotations

import math
from typing import Any

from ._dtype import float32, int64
from ._random import Generator, pick
from ._refuse import refuse
from .creation import pack
from .tensor import Tensor


def _gumbel(generator: Generator | None, shape: list[int]) -> Tensor:
    # u in [0, 1) in steps of 2^-24; shifted half a step into (0, 1) so both logs are finite
    us = pick(generator).uniforms(math.prod(shape))
    keys = [-math.log(-math.log(u + 2.0**-25)) for u in us]
    return Tensor._leaf_of(pack(keys, float32), shape, float32)


def _check(w: Tensor) -> None:
    bad_value = ((w < 0) | w.ne(w) | (w == math.inf)).any()
    empty_row = (w.sum(-1) <= 0).any()
    if bool((bad_value | empty_row).item()):
        raise RuntimeError(
            "probability tensor contains either `inf`, `nan` or element < 0, "
            "or a row whose sum is not positive (invalid multinomial distribution)"
        )


def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
    out: Any = None,
) -> Tensor:
    """torch.multinomial of a [C] or [N, C] float weight tensor -> int64 [num_samples] or
    [N, num_samples]; draws from our stream (gpulab.torch._random)."""
    if out is not None:
        raise refuse("multinomial(out=...)", "tensor")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype is not float32:
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    rows = input.detach() if input.ndim == 2 else input.detach().unsqueeze(0)
    _check(rows)
    logw = rows.log()
    if replacement:
        keys = logw.unsqueeze(1) + _gumbel(generator, [rows.shape[0], num_samples, n])
        draws = keys.argmax(-1)
    else:
        keys = logw + _gumbel(generator, [rows.shape[0], n])
        draws = keys.topk(num_samples, -1).indices if num_samples > 1 else keys.argmax(-1, True)
    draws = draws.to(int64)
    return draws if input.ndim == 2 else draws.squeeze(0)
