"""Where the suite's files are, in a checkout and in an installed wheel (one rule for both).

In a checkout this folder is pylib/gpulab/conformance/ and the JS runtime is the tree itself:
backends-js/src/ and kernels/ at the repository root. The wheel maps the same folders in
(setup.py) without copies: this folder as `gpulab.conformance`, backends-js as
`gpulab.jsruntime` (package.json + src/) and kernels/ as `gpulab.jsruntime.kernels`, which is
the npm package's layout (`gpu-lab`: src/ beside kernels/), so `src/kernel-files.mjs` finds its
kernels there as it does in node_modules/gpu-lab. An embedder may name their own installed
`gpu-lab` package instead (`JsRuntime.at(path)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
_TREE_ROOT = SUITE_DIR.parents[2]  # pylib/gpulab/conformance -> the checkout
IN_TREE = (_TREE_ROOT / "backends-js" / "src" / "runtime.mjs").is_file()
TREE_ROOT: Path | None = _TREE_ROOT if IN_TREE else None
_WHEEL_RUNTIME = SUITE_DIR.parent / "jsruntime"  # site-packages/gpulab/jsruntime


@dataclass(frozen=True)
class JsRuntime:
    """The JS runtime's source folder (runtime.mjs, ops.json, ...) and its kernels folder."""

    src: Path
    kernels: Path

    @property
    def entry(self) -> Path:
        return self.src / "runtime.mjs"

    @classmethod
    def at(cls, package: Path | str) -> JsRuntime:
        """An installed `gpu-lab` npm package (node_modules/gpu-lab: src/ and kernels/)."""
        root = Path(package).resolve()
        runtime = cls(root / "src", root / "kernels")
        runtime.check()
        return runtime

    def check(self) -> None:
        """Raise with what is missing where the runtime or its kernels are incomplete."""
        for path in (
            self.entry,
            self.src / "ops.json",
            self.kernels / "ops.json",
            self.kernels / "kernels.wasm",
        ):
            if not path.is_file():
                raise FileNotFoundError(f"JS runtime incomplete: {path} is missing")


def default_runtime() -> JsRuntime:
    """The checkout's runtime where this is a checkout, else the wheel's."""
    if TREE_ROOT is not None:
        return JsRuntime(TREE_ROOT / "backends-js" / "src", TREE_ROOT / "kernels")
    return JsRuntime(_WHEEL_RUNTIME / "src", _WHEEL_RUNTIME / "kernels")


# The op table the float64 reference reads: the one source (backends-js/src/ops.json), in the
# tree or as the wheel carries it.
OPS_JSON = default_runtime().src / "ops.json"
