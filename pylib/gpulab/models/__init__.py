"""Reference models built with the gpulab API (used by examples, tests and benchmarks)."""
