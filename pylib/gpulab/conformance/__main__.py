"""`python -m gpulab.conformance [options]` in a checkout: the same command as `gpulab
conformance` (cli.py says the options). Exit status: 0 every lane ran and passed, 1 a
regression, 2 a lane was unavailable (and nothing failed) or a usage error."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m gpulab.conformance"))
