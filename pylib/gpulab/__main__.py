"""`python -m gpulab ...` is the `gpulab` command."""

import sys

from .cli import main

sys.exit(main())
