"""`import torch` as the page does it (web/py/torch_shim.py written as torch.py ahead of
everything on sys.path): every submodule of gpulab.torch imports under the shim, so none may
import the real PyTorch (in the page, `torch` is the shim itself, still initialising)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import gpulab.torch
assert torch is gpulab.torch, torch
assert sys.modules["torch.nn.functional"] is F
print(type(nn.Linear(2, 3)).__module__, F.relu(torch.tensor([-1.0, 2.0])).tolist())
"""


def test_import_torch_in_the_page_gives_the_subset_with_every_submodule(tmp_path: Path) -> None:
    shutil.copy(ROOT / "web" / "py" / "torch_shim.py", tmp_path / "torch.py")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'pylib'}"}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "gpulab.torch.nn" in done.stdout and "[0.0, 2.0]" in done.stdout, done.stdout
