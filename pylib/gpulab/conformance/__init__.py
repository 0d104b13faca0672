"""The conformance corpus, its float64 reference, the multi-executor runner and its report.

See README.md in this folder; `python -m gpulab.conformance --help`.
"""
