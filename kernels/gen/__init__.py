"""Build-time generators of kernel sources (scripts/gen.py runs them; never imported at run time)."""
