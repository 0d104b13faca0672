"""`gpulab conformance` from an installed wheel, end to end.

The wheel is built from a copy of this checkout's files (tracked and untracked, not ignored: what
a fresh clone plus the work in progress would hold) with `pip wheel --no-deps
--no-build-isolation` (offline: setuptools >= 77 from this venv, the `test` extra), installed
with --no-deps into a fresh venv in a temporary folder outside the checkout, and run there with
no PYTHONPATH, so neither e2e/ nor pylib/ can be imported. The venv has no pip and no network,
so its dependencies (numpy, wgpu, playwright) come from this venv's site-packages through a
`.pth` line: a path on sys.path, after the venv's own site-packages, whose own .pth files (the
editable gpulab install) are not processed, so `gpulab` is the wheel's. Node is the one on
PATH; Chromium is the system one.
"""

from __future__ import annotations

import fnmatch
import json
import os
import site
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from gpulab.conformance.lanes import listed_entry
from gpulab.conformance.runner import load_cases

ROOT = Path(__file__).resolve().parents[1]
LANES = ["cpu-python", "node-wasm", "chromium-webgpu"]
# a few ops of each kind: exact (bit-identical across lanes), arith, a fixed-order reduction,
# an int32 result, and the largest reduction case (more than 65535 workgroups)
FILTER = "relu,abs/*int32*,add,argmax/int32_*,sum/all_4097"


def _setuptools_version() -> tuple[int, ...]:
    import setuptools

    return tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the checkout with this checkout's gpulab wheel installed."""
    assert _setuptools_version() >= (77,), (
        "the offline wheel build needs setuptools >= 77 in .venv (the test extra): make setup"
    )
    work = tmp_path_factory.mktemp("conformance-wheel")
    assert ROOT not in work.resolve().parents, "the venv must live outside the checkout"
    src = work / "src"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        path = ROOT / os.fsdecode(name)
        copy = src / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():  # the package's links to the one source (ops.json, kernels/wgsl)
            copy.symlink_to(os.readlink(path))
        elif path.is_file():
            copy.write_bytes(path.read_bytes())
    _check(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(work / "dist"),
            str(src),
        ],
        cwd=work,
    )
    wheel = next((work / "dist").glob("gpulab-*.whl"))
    venv = work / "venv"
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([python, "-c", where], capture_output=True, text=True, check=True)
    deps = Path(site.getsitepackages()[0])
    (Path(purelib.stdout.strip()) / "_gpulab_test_deps.pth").write_text(f"{deps}\n")
    _check(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=work,
    )
    return venv


def _clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH: the checkout's pylib must not be importable (nor
    count, for pip, as an installed gpulab)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _check(cmd: list, cwd: Path) -> None:
    done = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=300, check=False, env=_clean_env()
    )
    assert done.returncode == 0, f"{cmd}: {done.stdout[-2000:]}{done.stderr[-3000:]}"


def _gpulab(
    venv: Path, args: list[str], extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    env = _clean_env()
    env.update(XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"), **(extra_env or {}))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(venv / "bin" / "gpulab"), "conformance", *args],
        cwd=venv.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _expected_ops(pattern: str) -> list[str]:
    """The ops the filter selects, read from the checkout's corpus (not by the code under test)."""
    cases = json.loads((ROOT / "pylib/gpulab/conformance/cases.json").read_text())
    parts = pattern.split(",")
    return sorted(
        {
            c["op"]
            for c in cases
            if any(c["op"] == p or fnmatch.fnmatchcase(c["name"], p) for p in parts)
        }
    )


def test_installed_wheel_runs_three_lanes_to_a_passing_report(installed: Path) -> None:
    out = installed.parent / "report-pass"
    done = _gpulab(
        installed,
        ["--lane", ",".join(LANES), "--allow-software", "--cases", FILTER, "--report", str(out)],
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    payload = json.loads((out / "conformance.json").read_text())
    assert payload["verdict"] == {
        "passed": True,
        "exit_code": 0,
        "regressions": [],
        "unavailable": [],
        "fixed": [],
        "baseline": None,
    }
    # it ran from the wheel: the suite and the JS runtime are the installed package's
    venv = str(installed.resolve())
    assert payload["machine"]["suite_dir"].startswith(venv), payload["machine"]["suite_dir"]
    assert payload["machine"]["js_runtime"].startswith(venv), payload["machine"]["js_runtime"]
    lanes = {lane["lane"]["executor"]: lane for lane in payload["lanes"]}
    assert list(lanes) == LANES and all(lane["passed"] for lane in lanes.values())
    assert lanes["chromium-webgpu"]["lane"]["software"] is True, "SwiftShader is labelled"
    assert payload["machine"]["browsers"][0]["version"], "the browser version is in the summary"
    ops = _expected_ops(FILTER)
    assert sorted(payload["bitwise"]) == ops
    assert payload["bitwise"]["relu"]["status"] == "pass"
    assert payload["bitwise"]["argmax"]["summary"] == "bit-identical (3 lanes)"
    md = (out / "conformance.md").read_text()
    assert "Verdict: **PASS**" in md and "fallback" in md and "software adapter" in md
    root = ET.parse(out / "conformance.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == len(ops) * (len(LANES) + 1), "one per op x lane, one per op bitwise"
    assert int(root.get("tests")) == len(cases) and root.get("failures") == "0"
    for lane in LANES:
        names = sorted(
            c.get("name") for c in root.findall(f"testsuite[@name='corpus.{lane}']/testcase")
        )
        assert names == ops


def test_a_broken_kernel_fails_the_installed_command_naming_op_and_lane(installed: Path) -> None:
    out = installed.parent / "report-broken"
    done = _gpulab(
        installed,
        ["--lane", "cpu-python,node-wasm", "--cases", "relu,neg", "--report", str(out)],
        {"GPULAB_CONFORMANCE_BREAK": "node-wasm:relu"},
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    payload = json.loads((out / "conformance.json").read_text())
    failing = [(c["executor"], c["op"]) for c in payload["cells"] if c["status"] == "fail"]
    assert failing == [("node-wasm", "relu")]
    assert payload["bitwise"]["relu"]["status"] == "fail"
    assert payload["bitwise"]["relu"]["first"]["lanes"] == ["cpu-python", "node-wasm"]
    assert payload["bitwise"]["neg"]["status"] == "pass"
    root = ET.parse(out / "conformance.xml").getroot()
    failed = sorted(
        (c.get("classname"), c.get("name"))
        for c in root.iter("testcase")
        if c.find("failure") is not None
    )
    assert failed == [("corpus.bit-identical", "relu"), ("corpus.node-wasm", "relu")]
    md = (out / "conformance.md").read_text()
    relu = [c for c in load_cases() if c["op"] == "relu"]
    broken = sum(listed_entry(c["graph"], {"relu": "broken"}) is not None for c in relu)
    assert broken >= 8 and f"- node-wasm relu: {broken} of {len(relu)} cases failed" in md, md
