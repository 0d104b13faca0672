"""gpulab.torch in the page: `import torch` is the subset there, and the torch
fixture files (pylib/tests/torch_fixtures/fixtures.py, the same file the native tests use) run
on every page backend (webgpu on SwiftShader and webgl2 on ANGLE/SwiftShader are software
adapters, admitted and labelled so) against real PyTorch's results, computed here natively at
test time (fixtures.reference): every eager fixture for 5 steps, compiled calls (a training
step's blocking `.result()`, a model's `.submit`), and one fixture through a prepared
torch.compile session (await forms) and again by callbacks (step/sync chained in their
callbacks: what a browser without JSPI does). Values go into the page as float32 shortest
reprs, exact; the page compares with fixtures.compare and prints the problems (none)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from e2e.test_playground import DONE, open_notebook, playground_url, run_program  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
FIXTURES_FILE = ROOT / "pylib" / "tests" / "torch_fixtures" / "fixtures.py"
PREPARED = "mlp_dropout"  # SGD momentum (the fed first step) and dropout (fed counters)
BACKENDS = ["webgpu", "webgl2", "wasm", "cpu"]
SOFTWARE = {"webgpu": "SwiftShader", "webgl2": "ANGLE on SwiftShader"}


def _f32(v: float) -> str:
    """The shortest repr that reads back as the same float32 (9 digits at most)."""
    (r,) = struct.unpack("<f", struct.pack("<f", v))
    for digits in range(6, 10):
        text = f"{r:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == r:
            return text
    return repr(r)


def _compact(trace: list[dict[str, Any]]) -> str:
    steps = []
    for s in trace:
        params = {n: "[" + ",".join(_f32(v) for v in vs) + "]" for n, vs in s["params"].items()}
        body = ",".join(f'"{n}":{v}' for n, v in params.items())
        steps.append(f'{{"loss":{_f32(s["loss"])},"params":{{{body}}}}}')
    return "[" + ",".join(steps) + "]"


def references() -> dict[str, str]:
    import sys

    sys.path.insert(0, str(FIXTURES_FILE.parents[1]))
    from torch_fixtures import fixtures as fx

    return {name: _compact(fx.reference(spec)) for name, spec in fx.FIXTURES.items()}


SETUP = """open("/home/pyodide/torch_fixtures.py", "w").write({source!r})
import json
import torch
import torch_fixtures as fx
REFS = json.loads({refs!r})
print("SETUP", torch.__name__, len(fx.FIXTURES), sorted(REFS) == sorted(fx.FIXTURES))"""

EAGER = """for name in sorted(REFS):
    problems = fx.compare(fx.run(fx.FIXTURES[name], torch), REFS[name])
    print("EAGER", name, json.dumps(problems[:3]))"""

PREPARED_AWAIT = """b = fx.build(fx.FIXTURES[{name!r}], torch)
prep = torch.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
trace = []
for x, y in b.batches:
    loss = await prep.step(None, *b.tensors(x, y))
    await prep.sync()
    trace.append({{"loss": float(loss.item()), "params": b.params()}})
print("PREPARED", prep.backend, json.dumps(fx.compare(trace, REFS[{name!r}])[:3]))
prep.dispose()"""

# Compiled calls (one graph each, parameters up and back every call): blocking `.result()`
# (JSPI, Chromium) for the training step, `.submit(callback)` for the model.
COMPILED_CALLS = """b = fx.build(fx.FIXTURES["mlp_sgd"], torch)
step = torch.compile(b.train_step, training=True)
trace = []
for x, y in b.batches:
    loss = step(*b.tensors(x, y)).result()
    trace.append({"loss": float(loss.item()), "params": b.params()})
print("CALLS", json.dumps(fx.compare(trace, REFS["mlp_sgd"])[:3]))
x = b.tensors(*b.batches[0])[0]
want = b.model(x).tolist()
torch.compile(b.model)(x).submit(lambda out: print("SUBMIT", out.tolist() == want))"""

# The same session by callbacks only: each step's callback calls sync, whose callback reads
# the parameters and starts the next step (nothing blocks, nothing awaits).
PREPARED_CALLBACKS = """b = fx.build(fx.FIXTURES[{name!r}], torch)
prep = torch.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
trace = []

def after_step(loss, i):
    prep.sync(lambda _none: after_sync(loss, i))

def after_sync(loss, i):
    trace.append({{"loss": float(loss.item()), "params": b.params()}})
    if i + 1 < len(b.batches):
        prep.step(lambda l: after_step(l, i + 1), *b.tensors(*b.batches[i + 1]))
    else:
        print("CALLBACKS", json.dumps(fx.compare(trace, REFS[{name!r}])[:3]), len(trace))
        prep.dispose()

prep.step(lambda l: after_step(l, 0), *b.tensors(*b.batches[0]))
print("posted")"""


def stdout_lines(out: Any, prefix: str) -> list[str]:
    return [
        line
        for line in out.locator(".stream.stdout").inner_text().splitlines()
        if line.startswith(prefix)
    ]


@pytest.fixture(scope="module")
def torch_page(browser: Any, playground_url: str) -> Any:  # noqa: F811
    """One notebook (Pyodide loads once; software adapters admitted), the fixture file and
    PyTorch's results loaded into it; each test switches the backend."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(170_000)
    open_notebook(page, playground_url, backend="wasm", software=True)
    refs = "{" + ",".join(f'"{n}":{v}' for n, v in references().items()) + "}"
    out = run_program(page, SETUP.format(source=FIXTURES_FILE.read_text(), refs=refs))
    text = out.locator(".stream.stdout").inner_text()
    assert "note: `torch` in this page is gpulab.torch" in text  # the page states it
    assert stdout_lines(out, "SETUP") == ["SETUP gpulab.torch 12 True"]
    yield page
    ctx.close()


@pytest.mark.parametrize(
    "backend", BACKENDS, ids=[f"{b}-software" if b in SOFTWARE else b for b in BACKENDS]
)
def test_torch_fixtures_in_the_page(torch_page: Page, backend: str) -> None:
    page = torch_page
    status = page.get_by_role("status", name="Backend in use")
    page.get_by_label("Backend", exact=True).select_option(backend)
    expect(status).to_contain_text(f"Backend in use: {backend}")
    if backend in SOFTWARE:
        expect(status).to_contain_text("software")
    out = run_program(page, EAGER)
    names = sorted(fx_names())
    assert stdout_lines(out, "EAGER") == [f"EAGER {name} []" for name in names]
    out = run_program(page, PREPARED_AWAIT.format(name=PREPARED))
    assert stdout_lines(out, "PREPARED") == [f"PREPARED {backend} []"]
    out = run_program(page, COMPILED_CALLS)
    assert stdout_lines(out, "CALLS") == ["CALLS []"]
    assert stdout_lines(out, "SUBMIT") == ["SUBMIT True"]
    out = run_program(page, PREPARED_CALLBACKS.format(name=PREPARED))
    assert stdout_lines(out, "CALLBACKS") == ["CALLBACKS [] 5"]


def fx_names() -> list[str]:
    import sys

    sys.path.insert(0, str(FIXTURES_FILE.parents[1]))
    from torch_fixtures import fixtures as fx

    return list(fx.FIXTURES)
