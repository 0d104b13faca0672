"""`gpulab conformance` (and `python -m gpulab.conformance` in a checkout): run a suite on lanes,
judge it, write the JSON, markdown and JUnit reports, exit 0 / 1 / 2.

    gpulab conformance [--lane cpu-python,node-wasm,chromium-webgpu,firefox-webgl2,...]
        [--browser PATH] [--firefox PATH]
        [--allow-software] [--cases FILTER] [--suite corpus|bad-graphs] [--report DIR]
        [--baseline FILE] [--runtime PATH] [--lanes FILE]

Exit status: 0 every lane ran and nothing regressed, 1 a regression (a failing case or
differing bits that the baseline does not list), 2 a lane was unavailable, or a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from . import machine, report
from .baseline import load_baseline
from .bitwise import compare_lanes
from .executors import EXECUTORS, JsRuntime, browser_and_server, resolve
from .lanes import load_lanes
from .layout import default_runtime
from .runner import break_hook, run_conformance
from .suites import PLANNED, SUITES, Suite, select
from .verdict import judge_run

DEFAULT_LANES = (
    "cpu-python",
    "wgpu",
    "node-cpu",
    "node-wasm",
    "chromium-webgpu",
    "chromium-webgl2",
    "chromium-wasm",
    "chromium-cpu",
)


def parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--lane",
        action="append",
        default=[],
        metavar="L,L",
        help=f"lanes to run, comma-separated (default {','.join(DEFAULT_LANES)}); "
        f"known: {', '.join(EXECUTORS)}",
    )
    p.add_argument("--executor", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument(
        "--browser",
        metavar="PATH",
        help="the Chromium binary for chromium-* lanes "
        "(default GPULAB_CHROMIUM, else chromium on PATH, else /usr/bin/chromium)",
    )
    p.add_argument(
        "--firefox",
        metavar="PATH",
        help="the Firefox binary for firefox-* lanes "
        "(default GPULAB_FIREFOX, else firefox-esr or firefox on PATH)",
    )
    p.add_argument(
        "--allow-software",
        action="store_true",
        help="let wgpu and browser lanes use software adapters (labelled)",
    )
    p.add_argument(
        "--cases",
        metavar="FILTER",
        help="only these cases: comma-separated op names, case names or globs",
    )
    p.add_argument("--op", action="append", help=argparse.SUPPRESS)
    p.add_argument("--case", action="append", help=argparse.SUPPRESS)
    p.add_argument("--suite", default="corpus", help="corpus (default) or bad-graphs")
    p.add_argument(
        "--report",
        default="reports/conformance",
        metavar="DIR",
        help="report directory: conformance.json, .md, .xml",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="known failures (or an earlier conformance.json): gate on regressions",
    )
    p.add_argument(
        "--runtime",
        metavar="PATH",
        help="an installed gpu-lab npm package to run (default: the one shipped)",
    )
    p.add_argument("--lanes", metavar="FILE", help="another lanes.json (expected refusals)")
    return p


def lanes_of(args: argparse.Namespace) -> list[str]:
    named = [n.strip() for item in args.lane for n in item.split(",") if n.strip()]
    named += args.executor
    lanes = [resolve(n) for n in (named or DEFAULT_LANES)]
    unknown = [n for n in lanes if n not in EXECUTORS]
    if unknown:
        raise ValueError(f"unknown lanes {unknown}; known: {', '.join(EXECUTORS)}")
    return list(dict.fromkeys(lanes))


def suite_of(name: str) -> Suite:
    if name in PLANNED:
        raise ValueError(f"suite {name!r} is not available: {PLANNED[name]}")
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    return SUITES[name]


def cases_of(suite: Suite, args: argparse.Namespace) -> list[dict]:
    patterns = ",".join(filter(None, [args.cases, *(args.op or []), *(args.case or [])]))
    cases = select(suite.load(), patterns or None)
    if not cases:
        raise ValueError(f"no {suite.name} case matches {patterns!r}")
    return cases


def main(argv: Sequence[str] | None = None, prog: str = "gpulab conformance") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser(prog).parse_args(argv)
    try:
        lanes, suite = lanes_of(args), suite_of(args.suite)
        cases = cases_of(suite, args)
        runtime = JsRuntime.at(args.runtime) if args.runtime else None
        expectations = load_lanes(args.lanes)
        baseline = load_baseline(args.baseline)
        break_hook()  # a malformed test hook is a usage error, before any lane runs
    except (ValueError, TypeError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    opts = {
        "allow_software": args.allow_software,
        "runtime": runtime,
        "browser_path": args.browser,
        "firefox_path": args.firefox,
    }
    try:
        with _shared_browser(lanes, opts):
            reports = [_run_lane(name, suite, cases, expectations, opts) for name in lanes]
    except ValueError as exc:  # a break hook asked of a lane that has none
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    runs = {r.lane.executor: r.raw for r in reports if r.lane.available}
    skip = {r.lane.executor: {c.name for c in r.results if c.listed} for r in reports}
    bits = compare_lanes(cases, runs, skip) if suite.bitwise else {}
    verdict = judge_run(cases, reports, bits, baseline)
    summary = machine.summary(reports, [*prog.split(), *argv], runtime or default_runtime())
    paths = report.write_all(suite.name, reports, verdict, summary, args.report)
    print(paths["markdown"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return verdict.exit_code


def _run_lane(name: str, suite: Suite, cases: list[dict], expectations, opts: dict):
    print(f"running {len(cases)} {suite.name} cases on {name} ...", file=sys.stderr, flush=True)
    return run_conformance(name, cases, lanes=expectations, judge=suite.judge, **opts)


@contextlib.contextmanager
def _shared_browser(lanes: list[str], opts: dict):
    """One Chromium and one server for every chromium-* lane (each lane opens its own page);
    where they cannot start, each lane tries alone and reports why it is unavailable."""
    if not any(n.startswith("chromium-") for n in lanes):
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            browser, url = stack.enter_context(
                browser_and_server(None, None, opts["runtime"], opts["browser_path"])
            )
            opts.update(browser=browser, server_url=url)
        except Exception as exc:  # noqa: BLE001 - the lanes say it, one by one
            print(f"shared browser did not start ({type(exc).__name__}: {exc})", file=sys.stderr)
        yield
