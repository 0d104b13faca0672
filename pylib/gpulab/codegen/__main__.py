"""`python -m gpulab.codegen [--check] [--no-wasm]`: `make gen` / `make gen-check` (make.py)."""

import sys

from gpulab.codegen.make import main

sys.exit(main())
