"""`make gen`: write every generated file of the repository from its one source.

    python3 scripts/gen.py            # write what is stale, rebuild kernels.wasm (make gen)
    python3 scripts/gen.py --check    # exit 1 if a file is stale or kernels.wasm is not the
                                      # build of kernels/wasm/src (make gen-check)
    python3 scripts/gen.py --copies   # only the package copies (what scripts/sync.py did)

Sources -> generated files (docs/architecture.md, "Generated files", has the table):
- backends-js/src/ops.json (the op table) -> pylib/gpulab/ops.json (byte copy);
- kernels/ops.json (the kernel table) -> pylib/gpulab/kernels/ops.json (byte copy);
- kernels/gen/matmul.py -> the register-blocked matmul kernels kernels/wgsl/matmul*.wgsl;
- kernels/wgsl/*.wgsl -> pylib/gpulab/kernels/wgsl/ (byte copies: wgpu-py reads those);
- e2e/conformance/generate.py (+ bad_graphs.py) -> cases.json, bad_graphs.json;
- kernels/ops.json -> the `#if defined(OP_x)` arms of kernels/glsl/unary.glsl, binary.glsl;
- kernels/ops.json -> kernels/wasm/src/maps.rs (the map1!/map2! export list);
- kernels/ops.json -> the CPU map kernels backends-js/src/backends/cpu/maps.mjs and
  pylib/gpulab/cpu/maps.py;
- kernels/ops.json -> the docs rows marked `<!-- gen:KEY -->` (docs/plan.md, docs/webgl2.md,
  kernels/wasm/README.md);
- kernels/wasm/src -> kernels/kernels.wasm (scripts/build-wasm.sh; bit-reproducible).

Generation happens here, at build time only: every output is a committed plain file that the
browser and wgpu-py read verbatim. pylib/tests/test_generation.py runs `outputs()` and asserts
it equals what is committed (the wasm rebuild has its own test, backends-js/test/wasm-build).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # e2e.conformance and kernels.gen import from the root

WGSL = ROOT / "kernels/wgsl"
PKG = ROOT / "pylib/gpulab"

# Folders whose files are all generated: a file there that gen does not write is stale.
OWNED_DIRS = {PKG / "kernels/wgsl": "*.wgsl"}


def package_copies() -> dict[Path, bytes]:
    """The package data wgpu-py and the native planner read: byte copies of the shared sources.

    The WGSL copies are taken from what gen writes into kernels/wgsl (so one run is enough),
    the rest from kernels/wgsl as committed."""
    out = {
        PKG / "ops.json": (ROOT / "backends-js/src/ops.json").read_bytes(),
        PKG / "kernels/ops.json": (ROOT / "kernels/ops.json").read_bytes(),
    }
    kernels = {p.name: p.read_bytes() for p in sorted(WGSL.glob("*.wgsl"))}
    kernels.update({p.name: text for p, text in wgsl_kernels().items()})
    for name, text in sorted(kernels.items()):
        out[PKG / "kernels/wgsl" / name] = text
    return out


def matmul_kernels() -> dict[Path, bytes]:
    from kernels.gen.matmul import SHIPPED, generate

    return {WGSL / f"{name}.wgsl": generate(bm, bn, bk, 0, vec4).encode()
            for name, (bm, bn, bk, vec4) in SHIPPED.items()}


def wgsl_kernels() -> dict[Path, bytes]:
    """Every generated file of kernels/wgsl: the matmuls and the templated kernels."""
    from kernels.gen import wgsl

    return {**matmul_kernels(), **wgsl.outputs()}


def glsl_arms() -> dict[Path, bytes]:
    from kernels.gen import glsl

    return glsl.outputs()


def rust_exports() -> dict[Path, bytes]:
    from kernels.gen import rust

    return rust.outputs()


def cpu_kernels() -> dict[Path, bytes]:
    from kernels.gen import cpu

    return cpu.outputs()


def docs_rows() -> dict[Path, bytes]:
    from kernels.gen import docs

    return docs.outputs()


def corpus() -> dict[Path, bytes]:
    from e2e.conformance import generate

    return {path: text.encode() for path, text in generate.outputs().items()}


PRODUCERS: list[Callable[[], dict[Path, bytes]]] = [wgsl_kernels, package_copies, glsl_arms, rust_exports,
                                                     cpu_kernels, docs_rows, corpus]


def outputs() -> dict[Path, bytes]:
    """Every generated file and its bytes (nothing is written)."""
    out: dict[Path, bytes] = {}
    for produce in PRODUCERS:
        for path, data in produce().items():
            assert path not in out, f"{path} is generated twice"
            out[path] = data
    return out


def stale(files: dict[Path, bytes]) -> list[Path]:
    """Generated files whose committed bytes differ, and leftovers in folders gen owns."""
    found = [p for p, data in files.items() if not p.exists() or p.read_bytes() != data]
    for folder, pattern in OWNED_DIRS.items():
        found += [p for p in sorted(folder.glob(pattern)) if p not in files]
    return found


def write(files: dict[Path, bytes]) -> list[Path]:
    """Write the stale files, delete leftovers; returns what changed."""
    changed = stale(files)
    for path in changed:
        if path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(files[path])
        else:
            path.unlink()
    return changed


def wasm(check: bool) -> int:
    args = ["bash", str(ROOT / "scripts/build-wasm.sh")] + (["--check"] if check else [])
    return subprocess.run(args, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--copies", action="store_true", help="only the package copies")
    parser.add_argument("--no-wasm", action="store_true", help="skip the kernels.wasm build")
    args = parser.parse_args(argv)
    files = package_copies() if args.copies else outputs()
    rel = lambda p: p.relative_to(ROOT).as_posix()
    if args.check:
        found = stale(files)
        for path in found:
            print(f"stale: {rel(path)}", file=sys.stderr)
        if found:
            print("run `make gen` and commit the result", file=sys.stderr)
        else:
            print(f"gen --check: {len(files)} generated files up to date")
        code = 1 if found else 0
    else:
        for path in write(files):
            print(f"{'wrote' if path in files else 'removed'} {rel(path)}")
        code = 0
    if not (args.copies or args.no_wasm):
        code = max(code, wasm(args.check))
    return code


if __name__ == "__main__":
    sys.exit(main())
