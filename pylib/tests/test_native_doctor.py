"""`gpulab doctor` runs a tiny graph on every native backend it can reach and says why the
others were refused; it fails when a backend computes a wrong answer."""

from __future__ import annotations

import io

import pytest
from gpulab.native import doctor


def _doctor(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = doctor.main(list(args), out=out)
    return code, out.getvalue()


def test_doctor_without_software_refuses_it_with_the_reason(monkeypatch) -> None:
    monkeypatch.delenv("GPULAB_ALLOW_SOFTWARE", raising=False)
    code, text = _doctor()
    assert code == 0, text
    assert "PASS cpu-python" in text
    hardware = next(line for line in text.splitlines() if "wgpu (hardware)" in line)
    assert hardware.startswith(("PASS", "SKIP")), hardware
    if hardware.startswith("SKIP"):  # no GPU here: the refusal names the adapter
        assert "refused software adapter" in hardware and "UNAVAILABLE" in hardware
    assert "SKIP wgpu (software)" in text and "GPULAB_ALLOW_SOFTWARE" in text
    assert "make serve" in text


def test_doctor_with_software_runs_it_and_labels_it() -> None:
    pytest.importorskip("wgpu", reason="wgpu-py is not installed")
    code, text = _doctor("--allow-software")
    assert code == 0, text
    software = [line for line in text.splitlines() if "wgpu (software)" in line]
    assert software and (
        software[0].startswith("PASS") or "hardware adapter exists" in software[0]
    ), text
    if software[0].startswith("PASS"):
        assert "(software adapter)" in software[0]


def test_doctor_fails_on_a_wrong_answer(monkeypatch) -> None:
    monkeypatch.setattr(doctor, "EXPECTED", {3: [0.0, 60.0, 121.0], 7: [9.0, 21.0]})
    code, text = _doctor()
    assert code == 1
    assert "FAIL" in text and "cpu-python" in text
