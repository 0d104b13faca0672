"""The Firefox lane's report endpoint (`/api/lane-report`, gpulab.conformance.firefox.Reports)
takes reports from the lane's own page only: another Host (DNS rebinding) or another site's
Origin is 403, a body that is not a JSON object with a string `kind` is 400, and none of them is
recorded (a forged report was judged with the lane's; a non-JSON body dropped the connection
with a traceback; a report without `kind` crashed wait_done)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest
from gpulab.conformance.firefox import REPORT_PATH, Reports
from gpulab.static_server import start_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def lane():
    reports = Reports()
    srv = start_server(ROOT / "web", routes=[reports])
    port = srv.server_address[1]
    reports.serve_on(port)
    yield port, reports
    srv.shutdown()


def post(port: int, body: bytes, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", REPORT_PATH, body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def own(port: int) -> dict[str, str]:
    return {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "text/plain"}


def test_the_lane_page_reports(lane):
    port, reports = lane
    assert post(port, json.dumps({"kind": "machine", "x": 1}).encode(), own(port)) == 200
    assert reports.of("machine") == [{"kind": "machine", "x": 1}]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Host": "evil.example:80"},
    ],
    ids=["foreign-origin", "opaque-origin", "foreign-host"],
)
def test_a_report_from_another_site_is_refused(lane, headers):
    port, reports = lane
    status = post(port, json.dumps({"kind": "done"}).encode(), {**own(port), **headers})
    assert status == 403
    assert reports.items == []


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"no_kind": 1}', b'{"kind": 5}', b"[" * 100_000],
    ids=["not-json", "not-utf8", "array", "no-kind", "kind-not-text", "deep"],
)
def test_a_body_that_is_not_a_report_is_400(lane, body):
    port, reports = lane
    assert post(port, body, own(port)) == 400
    assert reports.items == []
    assert not reports.wait_done(0.01, lambda: True)  # nothing recorded that could crash it
