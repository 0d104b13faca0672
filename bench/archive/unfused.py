"""Run a script or module with the planners' fusions off (docs/plan.md "Fusion": map
fusion, the matmul epilogue, planner_multi's multi-tensor Adam and cross-entropy pair), or with
`--epilogue` only the matmul epilogue off: the A/B arms of bench/archive/fusion_h200.sh,
bench/archive/epilogue_h200.sh and bench/archive/fusestep_h200.sh.

    python3 bench/archive/unfused.py -m gpulab bench --backends wgpu --runs 30
    python3 bench/archive/unfused.py --epilogue bench/execute_mlp.py --backend wgpu --runs 50
    GPULAB_UNFUSE=multi python3 bench/archive/unfused.py -m gpulab bench ...   # only planner_multi's

GPULAB_UNFUSE, when set, names what goes (comma-separated: `map`, `epilogue`, `multi`; `none`
keeps every fusion), in place of the default (all) or `--epilogue`.
"""

from __future__ import annotations

import os
import runpy
import sys

from gpulab.native import planner, planner_epilogue, planner_multi


def main() -> None:
    args = sys.argv[1:]
    off = {"map", "epilogue", "multi"}
    if args[:1] == ["--epilogue"]:
        off, args = {"epilogue"}, args[1:]
    if "GPULAB_UNFUSE" in os.environ:
        off = set(os.environ["GPULAB_UNFUSE"].split(","))
    if "map" in off:
        planner.FUSABLE_MAP1.clear()  # no map1 op is fusable: every op its own dispatch
    if "epilogue" in off:
        planner_epilogue.EPILOGUE_MAP2.clear()  # no map2 node folds into a matmul
    if "multi" in off:
        planner_multi.MULTI_FUSIONS.clear()  # one adam_step per parameter, CE rows apart
    if args[:1] == ["-m"]:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
