"""Build-time generators of the kernel sources, the corpus and the docs tables (`make gen`:
`python -m gpulab.codegen`, make.py); never imported at run time, not shipped in the wheel."""
