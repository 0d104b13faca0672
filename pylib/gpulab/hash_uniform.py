"""The counter-hash uniform of hash_uniform and dropout (docs/protocol.md "The counter-hash
uniform"), twin of backends-js/src/hash-uniform.mjs: 32-bit wrapping multiply, xor and shifts
only. The dropout words (keep threshold, scale) are computed once here for every kernel.
Pure Python (no numpy): the native planner imports it too.
"""

from __future__ import annotations

import array
import math

MASK = 0xFFFFFFFF


def lowbias32(v: int) -> int:
    """lowbias32 (C. Wellons' hash-prospector): a bijection of the 32-bit words."""
    x = v & MASK
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    x ^= x >> 16
    return x


def hash_key(seed: int, counter: int) -> int:
    """lowbias32(lowbias32(seed) ^ counter): the key of one (seed, counter)."""
    return lowbias32(lowbias32(seed) ^ (counter & MASK))


def hash_word(key: int, index: int) -> int:
    """h of element `index`: lowbias32(key ^ lowbias32(index))."""
    return lowbias32(key ^ lowbias32(index))


def dropout_words(p: float) -> tuple[int, float, int]:
    """(threshold, scale, scale_bits): keep element i when (h >> 8) >= threshold =
    ceil(p * 2^24) (the same as u >= p, p * 2^24 being exact), then multiply by scale =
    float32(1 / (1 - p)) (float64, rounded once); scale_bits are its float32 bits."""
    scale = array.array("f", [1.0 / (1.0 - p)])
    return math.ceil(p * 2**24), scale[0], array.array("I", scale.tobytes())[0]
