"""`--baseline FILE`: the failures a build is allowed to have, so CI gates on regressions only.

Two forms. A list of known failures, per executor, each with a reason (as lanes.json, but for
what fails rather than what is refused):

    {"chromium-webgl2": {"matmul": "ANGLE on this driver rounds FMA differently (bug 12)",
                         "sum/all_4097": "..."},
     "chromium-webgpu": {"*": "no GPU on this CI runner"},
     "bitwise": {"sum": "..."}}

An entry is an op (every case of it), a case name, or "*" (the whole lane, unavailable
included); "bitwise" lists ops whose cross-lane bit comparison may differ. Or a previous
report's conformance.json: every case that failed there is known (reason "failed in the
baseline report"), and so is every op whose bits differed there.

A known failure is reported (markdown, JUnit `skipped`) but does not fail the run; a failure not
listed is a regression and does. An entry that no longer fails is reported as fixed, so the list
shrinks as lanes catch up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .executors import resolve

WHOLE_LANE = "*"
BITWISE = "bitwise"


@dataclass
class Baseline:
    known: dict[str, dict[str, str]] = field(default_factory=dict)  # executor -> entry -> reason
    source: str = ""

    def reason(self, executor: str, case: str, op: str) -> str | None:
        """Why this failure is known, or None (a regression)."""
        entries = self.known.get(executor, {})
        for key in (case, op, WHOLE_LANE):
            if key in entries:
                return entries[key]
        return None

    def lane_reason(self, executor: str) -> str | None:
        """Why the whole lane may fail or be unavailable, or None."""
        return self.known.get(executor, {}).get(WHOLE_LANE)

    def bitwise_reason(self, op: str) -> str | None:
        return self.known.get(BITWISE, {}).get(op)


def load_baseline(path: Path | str | None) -> Baseline:
    """The baseline file (either form), checked; an empty baseline when path is None."""
    if path is None:
        return Baseline()
    data = json.loads(Path(path).read_text())
    if isinstance(data, Mapping) and isinstance(data.get("lanes"), list):
        return _from_report(data, str(path))
    if not isinstance(data, Mapping):
        raise TypeError(f"baseline {path}: expected an object of executor -> entries")
    known: dict[str, dict[str, str]] = {}
    for lane, entries in data.items():
        if not isinstance(entries, Mapping):
            raise TypeError(f"baseline {path}: {lane!r} must map entries to reasons")
        for entry, reason in entries.items():
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"baseline {path}: {lane} {entry!r} needs a reason")
        name = lane if lane == BITWISE else resolve(lane)
        known[name] = {str(k): str(v) for k, v in entries.items()}
    return Baseline(known, str(path))


def _from_report(report: Mapping, source: str) -> Baseline:
    known: dict[str, dict[str, str]] = {}
    for lane in report["lanes"]:
        executor = resolve(lane["lane"]["executor"])
        failed = {
            r["name"]: "failed in the baseline report"
            for r in lane.get("results", [])
            if not r.get("passed")
        }
        if not lane["lane"].get("available", True):
            failed[WHOLE_LANE] = "unavailable in the baseline report"
        if failed:
            known[executor] = failed
    differing = {
        op: "bits differed across lanes in the baseline report"
        for op, bits in (report.get("bitwise") or {}).items()
        if not bits.get("passed")
    }
    if differing:
        known[BITWISE] = differing
    return Baseline(known, source)
