"""Tooling imports under names this project owns, so no PyPI distribution can shadow it.

`transformers` pulls in the PyPI distribution `kernels`, whose top-level package once shadowed
the checkout's kernels/ folder (imported as `kernels.gen` by the generator): `make gen` and the
generation test failed on a fresh machine. Now the generator is gpulab.codegen and the
conformance suite gpulab.conformance; nothing imports a bare `kernels`, `scripts`, `tools`,
`bench` or `e2e`. Checked two ways: no such import anywhere in the product, the harnesses or the
scripts (AST), and every tooling module imports, and `make gen-check` passes, with packages of
those names placed first on sys.path.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHADOWABLE = {"kernels", "scripts", "tools", "bench", "e2e"}
TOOLING = ["gpulab.codegen", "gpulab.conformance", "gpulab.benchmarks"]


def bare_imports(path: Path) -> list[str]:
    """`import x` / `from x import` of a shadowable top-level name in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path}:{node.lineno} {n}" for n in names if n.split(".")[0] in SHADOWABLE]
    return found


def test_no_product_harness_or_script_imports_a_shadowable_name() -> None:
    # bench/archive/ keeps one-off measurements as records of what was run, not as tooling
    harnesses = [p for p in (ROOT / "bench").rglob("*.py") if "archive" not in p.parts]
    files = [*(ROOT / "pylib/gpulab").rglob("*.py"), *harnesses, *(ROOT / "scripts").rglob("*.py")]
    found = [hit for path in files for hit in bare_imports(path)]
    assert not found, f"imports a PyPI distribution could shadow: {found}"


def test_the_check_finds_a_bare_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from kernels.gen import tables\nimport bench.gpu_timestamps\nimport os\n")
    hits = [hit.split(" ")[1] for hit in bare_imports(probe)]
    assert hits == ["kernels.gen", "bench.gpu_timestamps"]


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_tooling_imports_and_gen_checks_with_every_shadowable_name_first(tmp_path: Path) -> None:
    # the situation that broke a fresh machine is real in this venv too: the PyPI `kernels`
    # (through transformers) is installed; raises PackageNotFoundError if the lock lost it
    metadata.distribution("kernels")
    for name in SHADOWABLE:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the shadowing package {name} was imported')\n"
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "pylib")])}
    walk = (
        "import importlib, pkgutil\n"
        f"for top in {TOOLING!r}:\n"
        "    pkg = importlib.import_module(top)\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, top + '.'):\n"
        "        if not info.name.endswith('__main__'):\n"
        "            importlib.import_module(info.name)\n"
        "print('imported')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", walk],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr[-3000:]
    gen = subprocess.run(
        [sys.executable, "-m", "gpulab.codegen", "--check", "--no-wasm"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert gen.returncode == 0, gen.stderr[-3000:]
