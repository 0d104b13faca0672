"""A graph with more outputs than the protocol's `max_outputs` (256): a training forward of a
deep model saves that many activations for its backward. Rather than refuse it, its outputs are
packed: each flattened and joined (concat, at most 8 at a time) into a few outputs per dtype,
each at most `max_elements` long, and the runner slices them apart on the host. One graph, one
session step and one read-back, as before; the packing is layout ops only (exact bits).

Why packing and not raising the limit or splitting the graph: max_outputs is the protocol's, the
same on every lane (the JS runtime and the page check it too), so the torch backend stays inside
it; splitting into several graphs would compute the shared forward once per graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GpuLabError
from ..graph import Tensor
from ..optable import limits

JOIN = 8  # concat joins at most 8 tensors
PACKABLE = {"float32": "float32", "int32": "int32", "bool": "int32"}  # dtype -> packed as


@dataclass(frozen=True)
class Slot:
    """Where an output lies in a packed one: elements offset .. offset + size, its shape."""

    pack: str
    offset: int
    shape: tuple[int, ...]


def pack(outputs: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, Slot]]:
    """(the outputs to run, each original output's Slot); unchanged (no slots) within the
    limit. An output of a dtype concat cannot join (uint32) is refused with LIMIT."""
    lim = limits()
    if len(outputs) <= lim["max_outputs"]:
        return outputs, {}
    packed: dict[str, Tensor] = {}
    slots: dict[str, Slot] = {}
    for kind in sorted(set(PACKABLE.values())):
        names = [n for n, t in outputs.items() if PACKABLE.get(t.dtype) == kind]
        for chunk in _chunks(names, outputs, lim["max_elements"]):
            pack_name = f"pack{len(packed)}"
            offset, parts = 0, []
            for n in chunk:
                t = outputs[n]
                slots[n] = Slot(pack_name, offset, tuple(t.shape))
                offset += t.size
                word = t if t.dtype == kind else t.cast(kind)  # layout ops take no bool
                parts.append(word.reshape(-1))
            packed[pack_name] = _join(parts)
    left = [n for n in outputs if n not in slots]
    if left or len(packed) > lim["max_outputs"]:
        kinds = sorted({outputs[n].dtype for n in left})
        raise GpuLabError(
            "LIMIT",
            f"the graph has {len(outputs)} outputs > max_outputs {lim['max_outputs']} and "
            f"cannot be packed ({', '.join(kinds) or 'too many packs'})",
        )
    return packed, slots


def _chunks(names: list[str], outputs: dict[str, Tensor], max_elements: int) -> list[list[str]]:
    """names in order, cut where a pack would pass max_elements."""
    chunks: list[list[str]] = []
    size = max_elements + 1
    for n in names:
        t = outputs[n]
        if size + t.size > max_elements:
            chunks.append([])
            size = 0
        chunks[-1].append(n)
        size += t.size
    return chunks


def _join(parts: list[Tensor]) -> Tensor:
    """concat of rank-1 parts, JOIN at a time (a tree of concats)."""
    while len(parts) > 1:
        parts = [
            parts[i]
            if len(parts[i : i + JOIN]) == 1
            else parts[0].graph.concat(parts[i : i + JOIN])
            for i in range(0, len(parts), JOIN)
        ]
    return parts[0]
