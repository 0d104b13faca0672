"""The offline Pyodide index the page loads from: core files, a lock file, two wheels.

Pyodide resolves `loadPackage(name)` through `pyodide-lock.json` next to its core files. The
npm package's lock names ~350 packages whose wheels live on a CDN we never reach, so we make a
lock that names only what we serve: micropip (the wheel scripts/setup.sh downloaded) and gpulab
(built at start). Each entry's file name and sha256 match the served file, or Pyodide refuses it.
The core files and micropip are linked/copied into web/vendor/pyodide/ (stable); the lock and the
gpulab wheel are served from memory (they differ between servers started from different sources).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

CORE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _link_or_copy(src: Path, dst: Path) -> None:
    """Symlink `dst` -> `src` (cheap, 13 MB of core files); copy where links are not allowed."""
    if dst.is_symlink() or dst.exists():
        if dst.is_symlink() and dst.resolve() == src.resolve():
            return
        dst.unlink()
    try:
        os.symlink(src.resolve(), dst)
    except OSError:
        shutil.copy2(src, dst)


def pick_micropip(wheels_dir: Path, wanted_version: str | None) -> Path:
    """The micropip wheel to serve: the version Pyodide's own lock names if present, else newest."""
    found = sorted(wheels_dir.glob("micropip-*-py3-none-any.whl"))
    if not found:
        raise FileNotFoundError(
            f"no micropip wheel in {wheels_dir}: run scripts/setup.sh (make setup) first"
        )
    for wheel in found:
        if wanted_version and wheel.name == f"micropip-{wanted_version}-py3-none-any.whl":
            return wheel

    def version_key(p: Path) -> tuple[int, ...]:
        parts = p.name.split("-")[1].split(".")
        return tuple(int(x) if x.isdigit() else 0 for x in parts)

    return max(found, key=version_key)


def lock_entry(name: str, version: str, file_name: str, data: bytes, imports: list[str]) -> dict:
    return {
        "name": name,
        "version": version,
        "file_name": file_name,
        "install_dir": "site",
        "sha256": sha256_bytes(data),
        "package_type": "package",
        "imports": imports,
        "depends": [],
        "unvendored_tests": False,
    }


def prepare_index(
    pyodide_dir: Path, wheels_dir: Path, index_dir: Path, gpulab_wheel: tuple[str, bytes]
) -> bytes:
    """Link the core files and copy micropip into `index_dir`; return the lock file's bytes
    (naming micropip and the in-memory gpulab wheel `(file name, bytes)`)."""
    if not (pyodide_dir / "pyodide.mjs").exists():
        raise FileNotFoundError(f"Pyodide not found in {pyodide_dir}: run `npm install`")
    index_dir.mkdir(parents=True, exist_ok=True)
    for name in CORE_FILES:
        _link_or_copy(pyodide_dir / name, index_dir / name)
    upstream = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    wanted = upstream.get("packages", {}).get("micropip", {}).get("version")
    micropip = pick_micropip(wheels_dir, wanted)
    served = index_dir / micropip.name
    if not served.exists() or served.read_bytes() != micropip.read_bytes():
        tmp = served.with_suffix(".tmp")
        shutil.copyfile(micropip, tmp)
        tmp.replace(served)
    wheel_name, wheel_bytes = gpulab_wheel
    lock = {
        "info": upstream["info"],
        "packages": {
            "micropip": lock_entry(
                "micropip",
                micropip.name.split("-")[1],
                micropip.name,
                micropip.read_bytes(),
                ["micropip"],
            ),
            "gpulab": lock_entry(
                "gpulab", wheel_name.split("-")[1], wheel_name, wheel_bytes, ["gpulab"]
            ),
        },
    }
    return (json.dumps(lock, indent=1) + "\n").encode()


# Browser libraries of the notebook, from npm (pinned in package.json), served offline from
# node_modules through links in web/vendor/npm/ as the Pyodide core is: served name -> file.
NPM_FILES = {
    "marked.esm.js": "marked/lib/marked.esm.js",
    # the plotting library of display.plot (web/plot.mjs) and its stylesheet
    "uPlot.esm.js": "uplot/dist/uPlot.esm.js",
    "uPlot.min.css": "uplot/dist/uPlot.min.css",
    # CodeMirror 6 and its dependencies, one ES module each (web/index.html's import map)
    **{
        f"{name.replace('@', '').replace('/', '-')}.js": f"{name}/dist/index.js"
        for name in (
            "@codemirror/state",
            "@codemirror/view",
            "@codemirror/commands",
            "@codemirror/language",
            "@codemirror/autocomplete",
            "@codemirror/lang-python",
            "@codemirror/streamparser",
            "@lezer/common",
            "@lezer/highlight",
            "@lezer/lr",
            "@lezer/python",
        )
    },
    "marijn-find-cluster-break.js": "@marijn/find-cluster-break/src/index.js",
    "crelt.js": "crelt/index.js",
    "style-mod.js": "style-mod/src/style-mod.js",
    "w3c-keyname.js": "w3c-keyname/index.js",
}


def link_npm_files(node_modules: Path, vendor_dir: Path) -> None:
    """Link each of NPM_FILES into `vendor_dir` (web/vendor/npm); fail naming `npm install`."""
    vendor_dir.mkdir(parents=True, exist_ok=True)
    for served, source in NPM_FILES.items():
        if not (node_modules / source).exists():
            raise FileNotFoundError(f"{source} not found in {node_modules}: run `npm install`")
        _link_or_copy(node_modules / source, vendor_dir / served)
