"""A/B of the browser benchmark's webgl2 lane between two source trees, in interleaved rounds.

    .venv/bin/python bench/browser/ab.py BEFORE_TREE AFTER_TREE [--rounds 5] [--runs 10]

Each round runs `gpulab bench --browser --gpulab webgl2 --tfjs webgl --no-torch` once from each
tree (before, then after; a fresh Chromium each time, one at a time), so both see the same load
on this shared machine. Prints every round's medians and, per tree, the median of the rounds'
medians and the minimum of their minimums, for gpu-lab webgl2 and TF.js webgl. A tree is a
checkout with node_modules (TF.js), e.g. `git worktree add` or `git archive | tar x` plus a
node_modules symlink.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MODES = ("run1", "run8")


def one_run(tree: Path, runs: int) -> dict[str, Any]:
    """One page run of the webgl2 and TF.js webgl lanes from `tree`; its JSON result."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": f"{tree}/pylib:{tree}", "XDG_RUNTIME_DIR": "/tmp"}
        cmd = [sys.executable, str(tree / "bench/browser/run.py"), "--runs", str(runs)]
        cmd += ["--gpulab", "webgl2", "--tfjs", "webgl", "--no-torch", "--json", out.name]
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
        return json.loads(Path(out.name).read_text())


def lanes(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mode stats by lane name ('gpu-lab webgl2', 'tfjs webgl')."""
    return {f"{r['lib']} {r['backend']}": r for r in result["rows"] if "error" not in r}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    seen: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for rnd in range(args.rounds):
        for tag, tree in (("before", args.before), ("after", args.after)):
            result = one_run(tree.resolve(), args.runs)
            load = os.getloadavg()[0]
            cells = []
            for lane, row in lanes(result).items():
                for mode in MODES:
                    s = row[mode]
                    seen.setdefault((tag, lane, mode), []).append((s["median"], s["min"]))
                    cells.append(f"{lane} {mode} {s['median']:.2f}/{s['min']:.2f}")
            print(f"round {rnd + 1} {tag:6s} load {load:.1f}: " + "; ".join(cells), flush=True)
    print("\n| tree | lane | mode | median of round medians | min of round mins | rounds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (tag, lane, mode), vals in seen.items():
        med = statistics.median(v[0] for v in vals)
        low = min(v[1] for v in vals)
        print(f"| {tag} | {lane} | {mode} | {med:.2f} | {low:.2f} | {len(vals)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
