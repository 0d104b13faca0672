#!/bin/bash
# The final measurements on the lent H200, every table of docs/benchmarks.md marked "final
# run" from ONE device call at one commit:
#   run(command="bash bench/h200_final.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# Runs, in order: bench/h200_perf.sh (conformance on wgpu and node-webgpu, gpulab bench twice,
# execute_mlp, node + Dawn MLP, execute_phases, native_lab; its SGEMM lines skipped), 
# bench/sgemm_h200.sh (the SGEMM shapes: executor, cuBLAS, the lab, Tint), bench/timestamps_h200.sh (GPU timestamps, host switches A/B),
# bench/dawn_h200.sh (the JS backend's run paths and profile; its conformance skipped: done
# above), bench/sweep_h200.sh (cost curves + plot + per-dispatch profile of the big points).
# The device returns a few files only, so everything is packed into $OUT/final.tgz.
set -u
COMMIT=${1:-unknown}
FINAL=/tmp/final; rm -rf "$FINAL"; mkdir -p "$FINAL"/{perf,sgemm,ts,dawn,sweep}
part() {  # part NAME SCRIPT: one script's output under $FINAL/NAME (stdout.txt + its files)
  echo "== $1 ($(date -u +%H:%M:%S))"
  (OUT="$FINAL/$1" bash "$2" "$COMMIT" > "$FINAL/$1/stdout.txt" 2>&1); echo "$1 exit $?"
}
SKIP_SGEMM=1 part perf bench/h200_perf.sh
part sgemm bench/sgemm_h200.sh
part ts bench/timestamps_h200.sh
DAWN_SKIP_CONFORMANCE=1 part dawn bench/dawn_h200.sh
SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-240} part sweep bench/sweep_h200.sh
echo "== end ($(date -u +%H:%M:%S))"
(cd "$FINAL" && tar czf "${OUT:-/tmp/out}/final.tgz" .)
grep -h -E "Verdict|hardware adapter \| (PASS|FAIL)" "$FINAL"/perf/stdout.txt
