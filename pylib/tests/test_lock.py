"""The venv is the lock: every package requirements.lock.txt pins is installed at exactly that
version, and nothing else is installed but gpulab itself and the venv's own pip.

`make setup` makes the venv from the lock (scripts/setup.sh); `make lock` refreshes the lock
(pip-compile, with hashes). A venv that drifted (a package upgraded or added by hand, a lock
changed without `make setup`) fails here, naming each difference.
"""

from __future__ import annotations

import re
import sysconfig
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
# the venv's own installer and the project itself are not locked dependencies
NOT_LOCKED = {"pip", "gpulab"}


def canonical(name: str) -> str:
    """PEP 503's normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(text: str) -> list[str]:
    """The lock's requirement entries, each with its continuation lines (hashes, comments)."""
    entries: list[str] = []
    for line in text.splitlines():
        if PIN.match(line):
            entries.append(line)
        elif entries and line.startswith(" "):
            entries[-1] += "\n" + line
    return entries


def locked(text: str) -> dict[str, str]:
    """{name: version} of every `name==version` entry of a pip-compile lock."""
    return {canonical(m[1]): m[2] for m in map(PIN.match, requirements(text)) if m}


def installed() -> dict[str, str]:
    """The venv's site-packages only: setuptools puts its vendored packages' folder on sys.path
    when something imports it (torch does), and their metadata is not what the venv holds."""
    paths = sysconfig.get_paths()
    site = sorted({paths["purelib"], paths["platlib"]})
    return {canonical(d.metadata["Name"]): d.version for d in metadata.distributions(path=site)}


def differences(pins: dict[str, str], have: dict[str, str]) -> list[str]:
    """Each way the installed set differs from the lock, as a sentence."""
    found = []
    for name, version in sorted(pins.items()):
        if name not in have:
            found.append(f"{name}=={version} is locked but not installed")
        elif have[name] != version:
            found.append(f"{name} is {have[name]}, the lock says {version}")
    extra = sorted(set(have) - set(pins) - NOT_LOCKED)
    found += [f"{name}=={have[name]} is installed but not locked" for name in extra]
    return found


def test_the_lock_pins_every_package_with_hashes() -> None:
    text = LOCK.read_text(encoding="utf-8")
    pins = locked(text)
    assert {"numpy", "wgpu", "torch", "pytest", "onnx"} <= set(pins)
    unhashed = [e.split()[0] for e in requirements(text) if "--hash=sha256:" not in e]
    assert not unhashed, f"pins without a hash: {unhashed}"


def test_the_venv_is_exactly_the_lock() -> None:
    import setuptools  # noqa: F401  (its vendored folder joins sys.path, as when torch imports it)

    found = differences(locked(LOCK.read_text(encoding="utf-8")), installed())
    assert not found, "the venv differs from requirements.lock.txt (make setup remakes it):\n" + (
        "\n".join(found)
    )


def test_a_changed_version_or_an_extra_package_is_named() -> None:
    """The check can fail: a version changed in the venv, a locked package missing and an
    unlocked one installed are each reported."""
    pins = {"numpy": "2.4.6", "wgpu": "0.32.0", "torch": "2.13.0+cpu"}
    have = {"numpy": "2.3.0", "torch": "2.13.0+cpu", "requests": "2.0.0", "pip": "23.2.1"}
    assert differences(pins, have) == [
        "numpy is 2.3.0, the lock says 2.4.6",
        "wgpu==0.32.0 is locked but not installed",
        "requests==2.0.0 is installed but not locked",
    ]
