"""The product and its tests never import a harness from bench/.

bench/ holds measurements, not code anything else may stand on: a piece a harness and a test
both need lives in the product (e.g. backends-js/src/models/mlp.mjs, the MLP step graph of the
wasm page and the wasm tests). Checked here: the JS import specifiers (static `from '...'` and
dynamic `import('...')`, also inside the JS that Python tests send to a page) of the product
(backends-js/src, pylib/gpulab, web) and of the tests (backends-js/test, pylib/tests, e2e),
and Python files loaded from bench/ by path. Tests whose subject is a harness are the
exception, each named below with what it checks.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_AND_TESTS = [
    "backends-js/src",
    "pylib/gpulab",
    "web",
    "backends-js/test",
    "pylib/tests",
    "e2e",
]
# the tests of a harness: they load it to check it
HARNESS_TESTS = {
    "e2e/test_bench_browser.py": "the browser benchmark page and its timing helper",
    "e2e/test_dawn_harness.py": "node + Dawn's loader resolves the bench pages' absolute imports",
    "pylib/tests/test_gpu_timestamps.py": "bench/gpu_timestamps.py end to end on lavapipe",
}
JS_IMPORT = re.compile(r"""(?:\bfrom\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]""")
PY_PATH_LOAD = re.compile(r"""['"]bench/[^'"]+\.py['"]""")


def bench_imports(path: Path, text: str | None = None) -> list[str]:
    """Imports from bench/ in one file (its `text`, read when not given): JS specifiers,
    resolved from the file's folder, and Python files named by their path."""
    text = path.read_text(encoding="utf-8") if text is None else text
    found = []
    for match in JS_IMPORT.finditer(text):
        spec = match.group(1)
        if not spec.startswith(("/", ".")):
            continue  # a package name, not a file of the checkout
        target = (ROOT / spec.lstrip("/")) if spec.startswith("/") else (path.parent / spec)
        if (ROOT / "bench") in target.resolve().parents:
            found.append(f"{path.relative_to(ROOT)}: {spec}")
    if path.suffix == ".py":
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in PY_PATH_LOAD.finditer(text)]
    return found


def checked_files() -> list[Path]:
    files = []
    for folder in PRODUCT_AND_TESTS:
        for suffix in ("*.mjs", "*.js", "*.html", "*.py"):
            files += (ROOT / folder).rglob(suffix)
    skip = {*HARNESS_TESTS, str(Path(__file__).relative_to(ROOT))}  # this file's probes
    return [f for f in files if str(f.relative_to(ROOT)) not in skip]


def test_no_product_or_test_file_imports_from_bench() -> None:
    found = [hit for path in checked_files() for hit in bench_imports(path)]
    assert not found, f"imports from bench/ (move the shared piece into the product): {found}"


def test_the_harness_tests_exist() -> None:
    # an exception must not outlive its file
    missing = [name for name in HARNESS_TESTS if not (ROOT / name).is_file()]
    assert not missing, missing


def test_the_check_finds_imports_from_bench() -> None:
    js = (
        "import { a } from '../../bench/wasm/x.mjs';\n"
        "const b = await import('/bench/browser/timing.mjs');\n"
        "import { c } from '../src/runtime.mjs';\n"
        "import d from 'node:test';\n"
    )
    hits = bench_imports(ROOT / "backends-js/test/probe.mjs", js)
    assert [h.split(": ")[1] for h in hits] == [
        "../../bench/wasm/x.mjs",
        "/bench/browser/timing.mjs",
    ]
    py = 'spec = load(ROOT / "bench/gpu_timestamps.py")\nPAGE = "/web/index.html"\n'
    hits = bench_imports(ROOT / "e2e/probe.py", py)
    assert [h.split(": ")[1] for h in hits] == ['"bench/gpu_timestamps.py"']
