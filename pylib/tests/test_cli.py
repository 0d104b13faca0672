"""The `gpulab` command: run (with --no-gpu, errors, program arguments), and the dispatch of
serve/doctor/bench to their modules or to the documented stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from gpulab import cli, host

SEED = """from gpulab import Graph
def show(result): print(result["backend"], result["outputs"]["values"]["data"])
g = Graph(); a = g.tensor([-2, 3, 4]); b = g.tensor([10, 20, 30])
g.submit(show, values=(a * b).relu())   # -> cpu-python [0.0, 60.0, 120.0]
"""


def gpulab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")}
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        check=False,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_run_seed_example_without_gpu(tmp_path):
    prog = tmp_path / "seed.py"
    prog.write_text(SEED)
    out = gpulab("run", str(prog), "--no-gpu", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "cpu-python [0.0, 60.0, 120.0]\n"


def test_run_shows_the_program_traceback_and_exits_1(tmp_path):
    prog = tmp_path / "bad.py"
    prog.write_text("from gpulab import Graph\ng = Graph()\nx = g.tensor([1.0, 2.0])\ny = x @ x\n")
    out = gpulab("run", str(prog), "--no-gpu", cwd=tmp_path)
    assert out.returncode == 1
    assert "Traceback" in out.stderr and 'bad.py", line 4' in out.stderr
    assert "GpuLabError: VALIDATION: node 1 (matmul)" in out.stderr


def test_run_passes_arguments_and_exit_codes(tmp_path):
    prog = tmp_path / "args.py"
    prog.write_text(
        "import sys\nfrom gpulab import host\n"
        "print(sys.argv[1:], host.gpu_enabled(), host.software_allowed())\n"
        "sys.exit(3)\n"
    )
    out = gpulab("run", str(prog), "one", "--no-gpu", "--allow-software", "--two=2", cwd=tmp_path)
    assert out.returncode == 3
    assert out.stdout == "['one', '--two=2'] False True\n"
    missing = gpulab("run", str(tmp_path / "nope.py"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def fake_module(monkeypatch, name: str, calls: list) -> None:
    module = types.ModuleType(name)
    module.main = lambda *args: calls.append((name, args)) or 0
    monkeypatch.setattr(cli, "_optional_module", lambda wanted: module if wanted == name else None)


@pytest.mark.parametrize(
    "argv, name, args",
    [
        (
            ["serve", "--port", "9001"],
            "gpulab.server",
            (["--host", "127.0.0.1", "--port", "9001"],),
        ),
        (["doctor"], "gpulab.native.doctor", ([],)),
        (["doctor", "--allow-software"], "gpulab.native.doctor", (["--allow-software"],)),
        (["bench", "mlp", "--steps", "3"], "gpulab.bench", (["mlp", "--steps", "3"],)),
    ],
)
def test_subcommands_dispatch_to_their_modules(monkeypatch, argv, name, args):
    calls: list = []
    fake_module(monkeypatch, name, calls)
    assert cli.main(argv) == 0
    assert calls == [(name, args)]


def test_stand_ins_when_modules_are_missing(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_optional_module", lambda wanted: None)
    monkeypatch.setenv("GPULAB_GPU", "0")
    host.configure()
    assert cli.main(["doctor"]) == 0
    assert capsys.readouterr().out.startswith("PASS cpu-python")
    assert cli.main(["serve"]) == 0
    printed = capsys.readouterr().out
    assert "playground not built yet" in printed and "cpu-python [0.0, 60.0, 120.0]" in printed
    assert cli.main(["bench"]) == 2
    assert "not installed" in capsys.readouterr().err


def test_optional_module_finds_real_and_missing_modules():
    assert cli._optional_module("gpulab.protocol") is not None
    assert cli._optional_module("gpulab.no_such_module") is None
    assert cli._optional_module("gpulab.no_such_package.module") is None
