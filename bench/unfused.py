"""Run a script or module with the planners' fusion off (docs/plan.md "Fusion": map fusion and
the matmul epilogue), or with `--epilogue` only the matmul epilogue off: the A/B arms of
bench/fusion_h200.sh and bench/epilogue_h200.sh (issue 15).

    python3 bench/unfused.py -m gpulab bench --backends wgpu --runs 30
    python3 bench/unfused.py --epilogue bench/execute_mlp.py --backend wgpu --runs 50
"""

from __future__ import annotations

import runpy
import sys

from gpulab.native import planner, planner_epilogue


def main() -> None:
    args = sys.argv[1:]
    only_epilogue = args[:1] == ["--epilogue"]
    if only_epilogue:
        args = args[1:]
    else:
        planner.FUSABLE_MAP1.clear()  # no map1 op is fusable: every op its own dispatch
    planner_epilogue.EPILOGUE_MAP2.clear()  # no map2 node folds into a matmul
    if args[:1] == ["-m"]:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
