"""`gpulab run | serve | doctor | bench | conformance`: parse arguments and dispatch to the
modules that do the work (host, server, native.doctor, bench, the conformance suite). No logic
piles up here."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import runpy
import sys
import traceback
from types import ModuleType

from . import host

SEED_EXAMPLE = """from gpulab import Graph
def show(result): print(result["backend"], result["outputs"]["values"]["data"])
g = Graph(); a = g.tensor([-2, 3, 4]); b = g.tensor([10, 20, 30])
g.submit(show, values=(a * b).relu())
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpulab",
        description="GPU Lab: tensor graphs on the "
        "GPU in the browser (Pyodide) and natively (wgpu-py)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a Python program that builds and runs graphs")
    run.add_argument("program", help="path of the .py file")
    run.add_argument("args", nargs="*", help="arguments for the program")
    run.add_argument("--no-gpu", action="store_true", help="run on cpu-python (numpy) only")
    run.add_argument(
        "--allow-software",
        action="store_true",
        help="accept a software GPU adapter (lavapipe, SwiftShader)",
    )
    serve = sub.add_parser("serve", help="serve the playground")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="127.0.0.1")
    doctor = sub.add_parser("doctor", help="check what can run here")
    doctor.add_argument("args", nargs="*")
    serve.add_argument("args", nargs="*")
    bench = sub.add_parser("bench", help="run the benchmarks")
    bench.add_argument("args", nargs="*")
    conformance = sub.add_parser(
        "conformance", help="run the conformance suite on lanes (`gpulab conformance --help`)"
    )
    conformance.add_argument("args", nargs="*")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # every flag after `bench` belongs to the benchmark's own parser
        return _bench(argparse.Namespace(args=argv[1:]))
    if argv[:1] == ["conformance"]:  # likewise the suite's own parser
        return _conformance(argparse.Namespace(args=argv[1:]))
    parser = _parser()
    # gpulab's flags may come after the program (`gpulab run prog.py --no-gpu`); anything else
    # unknown belongs to the program or to the module behind the subcommand, which checks it
    args, extra = parser.parse_known_args(argv)
    args.args = [*args.args, *extra]
    commands = {
        "run": _run,
        "serve": _serve,
        "doctor": _doctor,
        "bench": _bench,
        "conformance": _conformance,
    }
    return commands[args.command](args) or 0


def _optional_module(name: str) -> ModuleType | None:
    """The module if it is part of this install (written by another part), else None."""
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name) if found else None


def _run(args: argparse.Namespace) -> int:
    host.configure(
        gpu=False if args.no_gpu else None, allow_software=True if args.allow_software else None
    )
    path = os.path.abspath(args.program)
    if not os.path.isfile(path):
        print(f"gpulab run: no such file: {args.program}", file=sys.stderr)
        return 2
    sys.argv = [path, *args.args]
    sys.path.insert(0, os.path.dirname(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException as err:  # noqa: BLE001 - the program's error, shown as Python would
        _print_program_traceback(err, path)
        return 1
    return 0


def _print_program_traceback(err: BaseException, path: str) -> None:
    """The traceback from the program's first frame on (runpy's own frames left out)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    traceback.print_exception(type(err), err, tb or err.__traceback__, file=sys.stderr)


def _serve(args: argparse.Namespace) -> int:
    server = _optional_module("gpulab.server")
    if server is not None:
        return server.main(["--host", args.host, "--port", str(args.port), *args.args]) or 0
    print(
        "playground not built yet (gpulab.server is missing); running the seed example "
        "natively instead:"
    )
    exec(compile(SEED_EXAMPLE, "<seed example>", "exec"), {"__name__": "__main__"})  # noqa: S102
    return 0


def _doctor(args: argparse.Namespace) -> int:
    doctor = _optional_module("gpulab.native.doctor")
    if doctor is not None:
        return doctor.main(args.args) or 0
    from .graph import Graph

    try:
        g = Graph()
        a, b = g.tensor([-2, 3, 4]), g.tensor([10, 20, 30])
        result = g.run(backend=host.CPU, values=(a * b).relu())
        ok = result["outputs"]["values"]["data"] == [0.0, 60.0, 120.0]
        print(
            f"{'PASS' if ok else 'FAIL'} cpu-python: (a * b).relu() = "
            f"{result['outputs']['values']['data']}"
        )
    except Exception as err:  # noqa: BLE001 - the doctor reports, it does not crash
        print(f"FAIL cpu-python: {err}")
        return 1
    return 0 if ok else 1


def _bench(args: argparse.Namespace) -> int:
    bench = _optional_module("gpulab.bench")
    if bench is None:
        print(
            "gpulab bench: the benchmarks are not installed (gpulab.bench is missing)",
            file=sys.stderr,
        )
        return 2
    return bench.main(args.args) or 0


def conformance_suite() -> ModuleType:
    """The suite's command module (gpulab.conformance, in a checkout and in the wheel alike)."""
    return importlib.import_module("gpulab.conformance.cli")


def _conformance(args: argparse.Namespace) -> int:
    try:
        suite = conformance_suite()
    except ImportError as err:  # numpy (the reference) is the suite's one Python dependency
        print(
            f"gpulab conformance: the suite cannot be imported ({err}): "
            "pip install 'gpulab[conformance]'",
            file=sys.stderr,
        )
        return 2
    return suite.main(args.args) or 0
