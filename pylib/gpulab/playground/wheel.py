"""Build the pure-Python wheel of `gpulab` that the page installs into Pyodide.

Built with `zipfile` at server start (no build tool, no network): the package directory as it
is on disk, minus caches and tests. Timestamps are fixed so the same sources give the same bytes
(and the same sha256 in the generated lock file).
"""

from __future__ import annotations

import base64
import hashlib
import io
import tomllib
import zipfile
from pathlib import Path

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
# the page needs neither the build tooling nor the conformance suite (its 2 MB corpus)
SKIP_DIRS = {"__pycache__", "tests", "playground", "codegen", "conformance"}


def project_version(pyproject: Path) -> str:
    """The `[project].version` of pyproject.toml."""
    with pyproject.open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def package_files(package_dir: Path) -> list[Path]:
    """Every file the wheel ships, sorted so the archive is reproducible."""
    files = []
    for path in sorted(package_dir.rglob("*")):
        rel_parts = path.relative_to(package_dir).parts
        if not path.is_file() or any(part in SKIP_DIRS for part in rel_parts):
            continue
        if path.suffix in {".pyc", ".pyo"}:
            continue
        files.append(path)
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def wheel_name(version: str) -> str:
    return f"gpulab-{version}-py3-none-any.whl"


def build_wheel(package_dir: Path, version: str) -> bytes:
    """The bytes of `gpulab-<version>-py3-none-any.whl`, built in memory.

    In memory, not on disk: several servers (tests, `gpulab serve`) may start at once from
    different source states, and each must serve the wheel its own lock file's sha256 names.
    """
    dist_info = f"gpulab-{version}.dist-info"
    meta = {
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: gpulab\nVersion: {version}\n"
            "Summary: Python tensor graphs on the GPU (browser build for Pyodide)\n"
        ),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: gpulab.playground.wheel\n"
            "Root-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{dist_info}/top_level.txt": "gpulab\n",
    }
    record = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for file in package_files(package_dir):
            name = "gpulab/" + file.relative_to(package_dir).as_posix()
            data = file.read_bytes()
            _write(zf, name, data)
            record.append(_record_line(name, data))
        for name, text in meta.items():
            _write(zf, name, text.encode())
            record.append(_record_line(name, text.encode()))
        record.append(f"{dist_info}/RECORD,,")
        _write(zf, f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())
    return buffer.getvalue()
