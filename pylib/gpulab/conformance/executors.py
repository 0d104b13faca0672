"""The executors (lanes) the conformance runner can drive, in a registry keyed by name.

Each executor takes the cases and options and returns a LaneRun: what ran (backend, adapter,
software or not, or why it could not run) and each case's raw float32 outputs or error.
A lane that cannot run here says UNAVAILABLE with the reason; it is never reported as passing.

- cpu-python: gpulab.host.execute(graph, backend="cpu-python") (the numpy evaluator).
- wgpu: gpulab.host.execute(graph, backend="wgpu", allow_software=...) (wgpu-py).
- node-cpu / node-wasm: node pylib/gpulab/conformance/node_executor.mjs <backend> (createRuntime).
- node-webgpu: the same with `--import pylib/gpulab/conformance/dawn_setup.mjs` (Dawn from npm `webgpu` as
  navigator.gpu; GPULAB_DAWN names its index.js): the page's WebGPU backend unchanged on a
  hardware GPU. Dawn refuses lavapipe, so on a machine without a GPU it is UNAVAILABLE.
- chromium-webgpu / -webgl2 / -wasm / -cpu: headless Chromium on page.html (the older names
  browser-webgpu etc. are aliases).

Each executor runs one backend lane of lanes.json (`lane_of`): node-cpu and chromium-cpu are
both lane `cpu`. Node and browser lanes take a test hook, `without_kernels=[op, ...]`, that
makes the runtime answer as if the backend had no kernel for those ops (hooks.withoutKernels).
The JS lanes run the runtime of layout.default_runtime() (the checkout's, or the wheel's) or
the one given as `runtime=JsRuntime.at(path)` (an installed gpu-lab npm package); the browser
lanes serve it with the page from a server of their own under the tree's URL layout.

A second test hook makes one lane's kernel for some ops return wrong bits, `break_ops=[op]`
(or GPULAB_CONFORMANCE_BREAK="lane:op,lane:op" in the environment, read by the runner):
cpu-python swaps the op's kernel in gpulab.cpu.kernels.KERNELS for one whose result has the
lowest bit of every element flipped; the JS lanes flip the same bit of every output a node of
that op produced, after the runtime returns (run_cases.mjs). It proves a wrong kernel fails the
run and is named in the report.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from .layout import SUITE_DIR, TREE_ROOT, JsRuntime, default_runtime

NODE_EXECUTOR = SUITE_DIR / "node_executor.mjs"
DAWN_SETUP = SUITE_DIR / "dawn_setup.mjs"  # node-webgpu's preload (Dawn, file: fetch)
PAGE_PATH = "/pylib/gpulab/conformance/page.html"


@dataclass
class LaneInfo:
    executor: str
    backend: str | None = None
    adapter: str | None = None
    software: bool | None = None
    available: bool = True
    reason: str = ""
    extra: dict = field(default_factory=dict)  # attempts, stats: whatever the lane reports


@dataclass
class RawResult:
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    error: dict | None = None  # {code, message, node}


@dataclass
class LaneRun:
    info: LaneInfo
    results: dict[str, RawResult]


Executor = Callable[..., LaneRun]
EXECUTORS: dict[str, Executor] = {}
LANES: dict[str, str] = {}  # executor -> the backend lane of lanes.json it runs
ALIASES: dict[str, str] = {}  # an older executor name -> its name now


def executor(name: str, lane: str) -> Callable[[Executor], Executor]:
    def register(fn: Executor) -> Executor:
        EXECUTORS[name] = fn
        LANES[name] = lane
        return fn

    return register


def resolve(name: str) -> str:
    """An executor's registered name (an alias resolved)."""
    return ALIASES.get(name, name)


def lane_of(name: str) -> str:
    """The lanes.json lane an executor runs (its own name where it was not registered)."""
    return LANES.get(resolve(name), name)


def unavailable(name: str, reason: str) -> LaneRun:
    return LaneRun(LaneInfo(name, available=False, reason=reason), {})


# ---- Python host lanes ----------------------------------------------------------------------


WIRE_DTYPES = {"float32": "<f4", "int32": "<i4", "uint32": "<u4", "bool": "u1"}


def _error_of(exc: BaseException) -> dict:
    code = getattr(exc, "code", None) or f"CRASH ({type(exc).__name__})"
    return {"code": code, "message": str(exc), "node": getattr(exc, "node", None)}


def _host_outputs(result: Mapping) -> dict[str, np.ndarray]:
    """Outputs in their dtype: a buffer is read as its bytes, a list converted."""
    outs = {}
    for name, out in result["outputs"].items():
        dtype = np.dtype(WIRE_DTYPES[out.get("dtype") or "float32"]).newbyteorder("=")
        raw = out["array"] if "array" in out else out["data"]
        if isinstance(raw, bytes | bytearray | memoryview):
            data = np.frombuffer(raw, dtype=dtype)
        else:
            data = np.asarray(raw, dtype=dtype)
        outs[name] = data.reshape(out["shape"])
    return outs


def _adapter_of(stats: Mapping) -> tuple[str | None, bool | None]:
    adapter = stats.get("adapter")
    if isinstance(adapter, Mapping):
        name = adapter.get("description") or adapter.get("device") or adapter.get("name")
        software = adapter.get("software")
        if software is None and adapter.get("adapter_type") is not None:
            software = str(adapter.get("adapter_type")).upper() == "CPU"
        return (str(name) if name else json.dumps(adapter, default=str)), software
    return (str(adapter) if adapter else None), stats.get("software")


def _run_host(name: str, backend: str, cases: list[dict], **kwargs: object) -> LaneRun:
    try:
        from gpulab import host
    except ImportError as exc:
        return unavailable(name, f"gpulab.host cannot be imported: {exc}")
    info = LaneInfo(name, backend=backend)
    results: dict[str, RawResult] = {}
    for case in cases:
        try:
            result = host.execute(case["graph"], backend=backend, strict=True, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is a case result
            err = _error_of(exc)
            if err["code"] == "UNAVAILABLE" and not results:
                return unavailable(name, err["message"])
            results[case["name"]] = RawResult(error=err)
            continue
        if info.adapter is None and info.software is None:
            stats = result.get("stats") or {}
            info.adapter, info.software = _adapter_of(stats)
            info.backend = result.get("backend", backend)
            info.extra["stats"] = json.loads(json.dumps(stats, default=str))
        if result.get("backend") != backend:  # a lane must not count another backend's result
            results[case["name"]] = RawResult(
                error={
                    "code": "FALLBACK",
                    "message": f"ran on {result.get('backend')}",
                    "node": None,
                }
            )
            continue
        results[case["name"]] = RawResult(outputs=_host_outputs(result))
    if backend == "cpu-python":
        info.software, info.adapter = False, info.adapter or "numpy (no GPU)"
    return LaneRun(info, results)


def flip_low_bits(arr: np.ndarray) -> np.ndarray:
    """The array with the lowest bit of every element flipped (the broken-kernel hook)."""
    arr = np.ascontiguousarray(arr)
    bits = arr.view(f"u{arr.dtype.itemsize}") ^ np.array(1, dtype=f"u{arr.dtype.itemsize}")
    return bits.view(arr.dtype).reshape(arr.shape)


@contextlib.contextmanager
def broken_cpu_kernels(ops: list[str]) -> Iterator[None]:
    """cpu-python's kernels for `ops` replaced by ones returning wrong bits (a test hook)."""
    from gpulab.cpu import kernels

    unknown = [op for op in ops if op not in kernels.KERNELS]
    if unknown:
        raise ValueError(f"break hook: cpu-python has no kernel for {unknown}")
    saved = {op: kernels.KERNELS[op] for op in ops}

    def broken(good: Callable) -> Callable:
        return lambda node, args: flip_low_bits(np.asarray(good(node, args)))

    kernels.KERNELS.update({op: broken(fn) for op, fn in saved.items()})
    try:
        yield
    finally:
        kernels.KERNELS.update(saved)


@executor("cpu-python", lane="cpu-python")
def run_cpu_python(cases: list[dict], break_ops: list[str] | None = None, **_: object) -> LaneRun:
    if not break_ops:
        return _run_host("cpu-python", "cpu-python", cases)
    with broken_cpu_kernels(list(break_ops)):
        return _run_host("cpu-python", "cpu-python", cases)


@executor("wgpu", lane="wgpu")
def run_wgpu(
    cases: list[dict], allow_software: bool = False, break_ops: list[str] | None = None, **_: object
) -> LaneRun:
    if break_ops:
        raise ValueError("break hook: the wgpu lane has none (use cpu-python or a JS lane)")
    return _run_host("wgpu", "wgpu", cases, allow_software=allow_software)


# ---- JS lanes: node and the browser share run_cases.mjs ------------------------------------


def _js_outputs(outputs: Mapping) -> dict[str, np.ndarray]:
    """Outputs from their little-endian bytes, in their dtype (float32 when none is given)."""
    arrays = {}
    for name, out in outputs.items():
        raw = base64.b64decode(out["b64"])
        wire = np.dtype(WIRE_DTYPES[out.get("dtype", "float32")])
        arrays[name] = (
            np.frombuffer(raw, dtype=wire).reshape(out["shape"]).astype(wire.newbyteorder("="))
        )
    return arrays


def _js_lane(name: str, payload: Mapping) -> LaneRun:
    """Turn run_cases.mjs's answer into a LaneRun."""
    lane = payload.get("lane", {})
    if not lane.get("available", False):
        return unavailable(name, lane.get("reason", "no reason given"))
    info = LaneInfo(
        name,
        backend=lane.get("backend"),
        adapter=lane.get("adapter"),
        software=lane.get("software"),
        extra=lane.get("extra", {}),
    )
    results = {}
    for r in payload.get("results", []):
        if r.get("error"):
            results[r["name"]] = RawResult(error=r["error"])
        else:
            results[r["name"]] = RawResult(outputs=_js_outputs(r["outputs"]))
    return LaneRun(info, results)


def _case_payload(cases: list[dict]) -> list[dict]:
    return [{"name": c["name"], "graph": c["graph"]} for c in cases]


BATCH = 100  # cases per node process / page call: a crash loses one batch, not the lane


def _run_js_batches(
    name: str, cases: list[dict], run_batch: Callable[[list[dict]], dict]
) -> LaneRun:
    """Run the cases in batches; a batch that crashes fails its cases (code CRASH)."""
    info: LaneInfo | None = None
    results: dict[str, RawResult] = {}
    first_problem = ""
    for start in range(0, len(cases), BATCH):
        batch = cases[start : start + BATCH]
        try:
            part = _js_lane(name, run_batch(batch))
            problem = "" if part.info.available else part.info.reason
        except Exception as exc:  # noqa: BLE001 - a crash is a result of its cases
            part, problem = None, f"{type(exc).__name__}: {exc}"
        if problem:
            first_problem = first_problem or problem
            err = {"code": "CRASH", "message": f"lane crashed: {problem[:500]}", "node": None}
            results.update({c["name"]: RawResult(error=err) for c in batch})
            continue
        info = info or part.info  # type: ignore[union-attr]
        results.update(part.results)  # type: ignore[union-attr]
    if info is None:
        return unavailable(name, first_problem or "no cases")
    return LaneRun(info, results)


def node_command() -> str:
    """The node binary: $NODE, else `node` on PATH."""
    return os.environ.get("NODE", "node")


def _run_node(
    name: str,
    backend: str,
    cases: list[dict],
    allow_software: bool = False,
    timeout_s: float = 600,
    without_kernels: list[str] | None = None,
    node_args: tuple[str, ...] = (),
    runtime: JsRuntime | None = None,
    break_ops: list[str] | None = None,
    **_: object,
) -> LaneRun:
    runtime = runtime or default_runtime()
    cmd = [
        node_command(),
        *node_args,
        str(NODE_EXECUTOR),
        backend,
        "--runtime=" + runtime.entry.as_uri(),
    ]
    if allow_software:
        cmd.append("--allow-software")
    if without_kernels:
        cmd.append("--without-kernels=" + ",".join(without_kernels))
    if break_ops:
        cmd.append("--break-ops=" + ",".join(break_ops))

    def run_batch(batch: list[dict]) -> dict:
        proc = subprocess.run(
            cmd,
            input=json.dumps(_case_payload(batch)),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=SUITE_DIR,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"node executor exited {proc.returncode}: {proc.stderr[-2000:]}")
        return json.loads(proc.stdout)

    try:
        runtime.check()
    except FileNotFoundError as exc:
        return unavailable(name, str(exc))
    return _run_js_batches(name, cases, run_batch)


@executor("node-cpu", lane="cpu")
def run_node_cpu(cases: list[dict], **opts: object) -> LaneRun:
    return _run_node("node-cpu", "cpu", cases, **opts)  # type: ignore[arg-type]


@executor("node-wasm", lane="wasm")
def run_node_wasm(cases: list[dict], **opts: object) -> LaneRun:
    return _run_node("node-wasm", "wasm", cases, **opts)  # type: ignore[arg-type]


@executor("node-webgpu", lane="webgpu")
def run_node_webgpu(cases: list[dict], **opts: object) -> LaneRun:
    if TREE_ROOT is None:
        return unavailable(
            "node-webgpu",
            "node-webgpu needs a checkout (pylib/gpulab/conformance/dawn_setup.mjs "
            "and the npm `webgpu` package): it is not part of the wheel",
        )
    return _run_node(
        "node-webgpu",
        "webgpu",
        cases,  # type: ignore[arg-type]
        node_args=("--import", DAWN_SETUP.as_uri()),
        **opts,
    )


def suite_routes(runtime: JsRuntime) -> list:
    """The tree's URL layout over wherever the files are: /backends-js/src/ (the runtime; its
    kernel-files.mjs then reads /kernels/), /kernels/ and /pylib/gpulab/conformance/ (the page)."""
    from gpulab.server import Mount

    return [
        Mount("/backends-js/src/", runtime.src),
        Mount("/kernels/", runtime.kernels),
        Mount("/pylib/gpulab/conformance/", SUITE_DIR),
    ]


@contextlib.contextmanager
def browser_and_server(
    browser: object = None,
    server_url: str | None = None,
    runtime: JsRuntime | None = None,
    browser_path: str | None = None,
):
    """Reuse the caller's browser/server (pytest fixtures) or start our own."""
    with contextlib.ExitStack() as stack:
        if server_url is None:
            from gpulab.static_server import start_server

            runtime = runtime or default_runtime()
            runtime.check()
            srv = start_server(SUITE_DIR, host="127.0.0.1", port=0, routes=suite_routes(runtime))
            stack.callback(srv.shutdown)
            server_url = f"http://127.0.0.1:{srv.server_address[1]}"
        if browser is None:
            from playwright.sync_api import sync_playwright

            from .browser import launch

            pw = stack.enter_context(sync_playwright())
            browser = launch(pw, browser_path)
            stack.callback(browser.close)  # type: ignore[attr-defined]
        yield browser, server_url


class _LanePage:
    """page.html in a fresh browser context; reopened after a crash."""

    def __init__(self, browser: object, url: str, timeout_s: float) -> None:
        self.browser, self.url, self.timeout_s = browser, url, timeout_s
        self.console: list[str] = []
        self.ctx = None
        self.page = None

    def open(self) -> None:
        self.close()
        self.ctx = self.browser.new_context()  # type: ignore[attr-defined]
        page = self.ctx.new_page()
        page.set_default_timeout(self.timeout_s * 1000)
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        page.goto(self.url + PAGE_PATH)
        try:
            page.wait_for_function("window.gpulabConformance !== undefined", timeout=60_000)
        except Exception as exc:
            raise RuntimeError(f"{PAGE_PATH} did not load: {self.console[-5:]}") from exc
        self.page = page

    def run(
        self,
        backend: str,
        allow_software: bool,
        batch: list[dict],
        without_kernels: list[str],
        break_ops: list[str],
    ) -> dict:
        if self.page is None:
            self.open()
        try:
            return self.page.evaluate(  # type: ignore[union-attr]
                "([b, s, c, w, x]) => window.gpulabConformance.run(b, s, JSON.parse(c), w, x)",
                # as JSON text: Playwright's own serializer recurses into (hostile) deep graphs
                [
                    backend,
                    allow_software,
                    json.dumps(_case_payload(batch)),
                    without_kernels,
                    break_ops,
                ],
            )
        except Exception:
            self.page = None  # the next batch gets a fresh page
            raise

    def machine(self) -> dict:
        """The browser's own view: user agent, WebGPU adapter info (fallback flag), WebGL2."""
        if self.page is None:
            self.open()
        try:
            return self.page.evaluate("() => window.gpulabConformance.machine()")  # type: ignore[union-attr]
        except Exception as exc:  # noqa: BLE001 - the summary says what it could not read
            return {"error": f"{type(exc).__name__}: {exc}"}

    def close(self) -> None:
        if self.ctx is not None:
            with contextlib.suppress(Exception):
                self.ctx.close()
        self.ctx = self.page = None


def _run_browser(
    name: str,
    backend: str,
    cases: list[dict],
    allow_software: bool = False,
    browser: object = None,
    server_url: str | None = None,
    timeout_s: float = 600,
    without_kernels: list[str] | None = None,
    runtime: JsRuntime | None = None,
    browser_path: str | None = None,
    break_ops: list[str] | None = None,
    **_: object,
) -> LaneRun:
    machine: dict = {}
    try:
        with browser_and_server(browser, server_url, runtime, browser_path) as (b, url):
            lane_page = _LanePage(b, url, timeout_s)
            try:
                lane_page.open()
                machine = {
                    "browser": "chromium",
                    "version": getattr(b, "version", None),
                    **lane_page.machine(),
                }
                run = _run_js_batches(
                    name,
                    cases,
                    lambda batch: lane_page.run(
                        backend,
                        allow_software,
                        batch,
                        list(without_kernels or []),
                        list(break_ops or []),
                    ),
                )
            finally:
                lane_page.close()
    except ImportError as exc:
        return unavailable(
            name, f"browser lanes need Playwright ({exc}): pip install 'gpulab[conformance]'"
        )
    except Exception as exc:  # noqa: BLE001 - a lane that cannot start is UNAVAILABLE
        return unavailable(name, f"browser lane did not run: {type(exc).__name__}: {exc}")
    run.info.extra["console"] = lane_page.console[-20:]
    run.info.extra["machine"] = machine
    return run


def _browser_executor(backend: str) -> Executor:
    lane = f"chromium-{backend}"

    def run(cases: list[dict], **opts: object) -> LaneRun:
        return _run_browser(lane, backend, cases, **opts)  # type: ignore[arg-type]

    run.__name__ = f"run_chromium_{backend}"
    ALIASES[f"browser-{backend}"] = lane
    return executor(lane, lane=backend)(run)


for _backend in ("webgpu", "webgl2", "wasm", "cpu"):
    _browser_executor(_backend)


# the Firefox lanes register themselves (firefox.py imports this module's helpers)
from . import firefox as _firefox  # noqa: F401
