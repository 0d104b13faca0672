"""Random numbers of gpulab.torch: our own counter-hash stream, NOT PyTorch's.

A `Generator` is (seed, counter). Each draw (one `randn`/`rand`/`randint` call, one dropout
mask) takes the next counter c; element i of a host draw uses the protocol's counter hash
(docs/protocol.md "The counter-hash uniform", gpulab.hash_uniform): u(i) = (h >> 8) * 2^-24
with h = lowbias32(key ^ lowbias32(i)), key = lowbias32(lowbias32(seed) ^ c). Normals are
Box-Muller over the words of indices (2i + 1, 2i + 2) (index 0 is skipped: seed 0 at counter
0 has key 0, whose word 0 is 0): z = sqrt(-2 ln u0) cos(2 pi u1) with u0 = ((h >> 8) + 0.5)
* 2^-24 in (0, 1), in float64, rounded once to float32. A dropout mask is the graph's own `dropout` op with the
generator's seed and that counter, so masks are the same bits on every backend.

The values cannot equal torch's Mersenne-Twister / Philox streams: code that needs torch's
exact numbers (the fixtures) passes its initial weights and masks explicitly.
"""

from __future__ import annotations

import math

from ..hash_uniform import MASK, hash_key, hash_word


class Generator:
    """torch.Generator: `manual_seed(s)`, `initial_seed()`, `get_state()`/`set_state()` (the
    pair (seed, counter))."""

    def __init__(self, device: str = "cpu") -> None:
        self.seed = 0
        self.counter = 0

    def manual_seed(self, seed: int) -> Generator:
        self.seed = int(seed) & MASK
        self.counter = 0
        return self

    def initial_seed(self) -> int:
        return self.seed

    def get_state(self) -> tuple[int, int]:
        return (self.seed, self.counter)

    def set_state(self, state: tuple[int, int]) -> None:
        self.seed, self.counter = int(state[0]) & MASK, int(state[1]) & MASK

    def next_counter(self) -> int:
        """The counter of the next draw (then advanced)."""
        c = self.counter
        self.counter = (c + 1) & MASK
        return c

    def uniforms(self, n: int) -> list[float]:
        key = hash_key(self.seed, self.next_counter())
        return [(hash_word(key, i) >> 8) * 2.0**-24 for i in range(n)]

    def normals(self, n: int) -> list[float]:
        key = hash_key(self.seed, self.next_counter())
        out = []
        for i in range(n):
            u0 = ((hash_word(key, 2 * i + 1) >> 8) + 0.5) * 2.0**-24  # in (0, 1)
            u1 = (hash_word(key, 2 * i + 2) >> 8) * 2.0**-24
            out.append(math.sqrt(-2.0 * math.log(u0)) * math.cos(2.0 * math.pi * u1))
        return out


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (our stream: see the module doc)."""
    return default_generator.manual_seed(seed)


def initial_seed() -> int:
    return default_generator.initial_seed()


def pick(generator: Generator | None) -> Generator:
    return default_generator if generator is None else generator
