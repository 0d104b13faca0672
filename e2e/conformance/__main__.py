"""`python -m e2e.conformance --executor X [--executor Y] [--allow-software] [--report DIR]`.

Runs the corpus on each executor, prints the op x executor table, writes DIR/conformance.json
and DIR/conformance.md. Exit status: 0 when every lane ran and passed, 1 when a case failed,
2 when a lane was unavailable (and nothing failed).
"""

from __future__ import annotations

import argparse
import sys

from e2e.conformance.executors import EXECUTORS
from e2e.conformance.runner import load_cases, run_conformance, to_markdown, write_reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.conformance", description=__doc__)
    parser.add_argument("--executor", action="append", required=True, choices=list(EXECUTORS),
                        help="a lane to run (repeat for a combined table)")
    parser.add_argument("--allow-software", action="store_true",
                        help="let wgpu and browser lanes use software adapters (labelled)")
    parser.add_argument("--report", default="reports/conformance", help="report directory")
    parser.add_argument("--op", action="append", help="only the cases of this op (repeatable)")
    parser.add_argument("--case", action="append", help="only this case name (repeatable)")
    parser.add_argument("--lanes", default=None,
                        help="the expectation list (default e2e/conformance/lanes.json)")
    args = parser.parse_args(argv)
    cases = load_cases(names=args.case, ops=args.op)
    reports = []
    for name in args.executor:
        print(f"running {len(cases)} cases on {name} ...", file=sys.stderr, flush=True)
        reports.append(run_conformance(name, cases, lanes=args.lanes,
                                       allow_software=args.allow_software))
    json_path, md_path = write_reports(reports, args.report)
    print(to_markdown(reports))
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    if any(r.failures() for r in reports):
        return 1
    return 0 if all(r.passed for r in reports) else 2


if __name__ == "__main__":
    sys.exit(main())
