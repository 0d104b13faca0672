"""The tolerance judge's twins agree: pylib/gpulab/conformance/compare.py (the conformance runner's) and
backends-js/src/tolerance.mjs (the playground's compare view), on the corpus's outputs.

Each corpus output's float64 reference and scale come from the reference evaluator; the
candidates are the reference itself and copies moved by k float32 ulps around each class's
bound, with a NaN or an infinity planted, so both passing and failing verdicts are compared.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
from pathlib import Path

import numpy as np
from gpulab.conformance.compare import compare
from gpulab.conformance.reference import OP_TABLE, evaluate

ROOT = Path(__file__).resolve().parents[1]
CASES = json.loads((ROOT / "pylib/gpulab/conformance/cases.json").read_text())
KEEP = 48  # elements per output: enough for every edge, small enough to stay fast

NODE_JUDGE = """
import { judge } from './backends-js/src/tolerance.mjs';
const b64 = (s, T) => { const b = Buffer.from(s, 'base64');
  return new T(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)); };
let text = ''; for await (const chunk of process.stdin) text += chunk;
const out = JSON.parse(text).map((t) => {
  const got = t.dtype === 'float32' ? b64(t.got, Float32Array) : b64(t.got, Int32Array);
  const v = judge(got, b64(t.ref, Float64Array), b64(t.scale, Float64Array), t.tolerance, t.dtype);
  return { ...v, maxUlp: Number.isFinite(v.maxUlp) ? v.maxUlp : 'inf' };
});
process.stdout.write(JSON.stringify(out));
"""


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def _step(x: np.ndarray, k: int) -> np.ndarray:
    """x (float32) moved k ulps away from zero (finite values only; NaN/inf kept)."""
    b = x.view(np.int32).astype(np.int64)
    moved = np.where(np.isfinite(x), b + k, b).clip(-(2**31), 2**31 - 1).astype(np.int32)
    return moved.view(np.float32)


def _candidates(ref: np.ndarray, tolerance: str) -> list[np.ndarray]:
    with np.errstate(over="ignore"):
        base = ref.astype(np.float32)
    ulps = int(OP_TABLE["tolerance_classes"][tolerance]["ulps"])
    out = [base] + [_step(base, k) for k in sorted({1, ulps, ulps + 1, 2 * ulps + 3})]
    nan, inf = base.copy(), base.copy()
    nan[0], inf[-1] = np.nan, np.inf
    return [*out, nan, inf]


def _trials() -> list[dict]:
    trials = []
    for case in CASES:
        refs = evaluate(case["graph"])
        for out in case["graph"]["outputs"]:
            ref = refs[out["id"]]
            value = np.asarray(ref.value).reshape(-1)[:KEEP]
            if value.size == 0:
                continue
            scale = np.asarray(ref.scale, dtype=np.float64).reshape(-1)[:KEEP]
            node = next(n for n in case["graph"]["nodes"] if n["id"] == out["id"])
            tolerance = OP_TABLE["ops"][node["op"]]["tolerance"]  # as the runner judges it
            if ref.dtype != "float32":
                ints = value.astype(np.int32)
                gots = [ints, ints + np.int32(1)]
                for got in gots:
                    trials.append(
                        {
                            "got": got,
                            "ref": value.astype(np.float64),
                            "scale": scale,
                            "tolerance": tolerance,
                            "dtype": ref.dtype,
                        }
                    )
                continue
            for got in _candidates(value.astype(np.float64), tolerance):
                trials.append(
                    {
                        "got": got,
                        "ref": value.astype(np.float64),
                        "scale": scale,
                        "tolerance": tolerance,
                        "dtype": "float32",
                    }
                )
    return trials


def test_js_and_python_judges_agree_on_the_corpus() -> None:
    trials = _trials()
    assert len(trials) > 1000, len(trials)
    payload = json.dumps(
        [{k: (_b64(v) if isinstance(v, np.ndarray) else v) for k, v in t.items()} for t in trials]
    )
    run = subprocess.run(
        ["node", "--input-type=module", "-e", NODE_JUDGE],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=60,
    )
    js = json.loads(run.stdout)
    verdicts: set[tuple[str, str, bool]] = set()  # (tolerance class, dtype, passed) seen
    for t, j in zip(trials, js, strict=True):
        py = compare(t["got"], t["ref"], t["scale"], t["tolerance"], t["dtype"])
        where = f"{t['tolerance']} {t['dtype']} ref={t['ref'][:4]} got={t['got'][:4]}"
        assert j["passed"] == py.passed, where
        assert (j["bad"], j["worst"]) == (py.bad, py.worst), where
        js_ulp = math.inf if j["maxUlp"] == "inf" else j["maxUlp"]
        assert js_ulp == py.max_ulp or math.isclose(js_ulp, py.max_ulp, rel_tol=1e-12), where
        verdicts.add((t["tolerance"], t["dtype"], py.passed))
    # not vacuous: every tolerance class judged (each dtype it meets) gave both verdicts
    one_sided = {
        (tolerance, dtype)
        for tolerance, dtype, _ in verdicts
        if not {(tolerance, dtype, True), (tolerance, dtype, False)} <= verdicts
    }
    assert not one_sided, f"only one verdict ever given for {sorted(one_sided)}"
