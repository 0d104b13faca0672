"""The frontends' one dtype map (gpulab.functional.dtypes): each row is the dtype torch and ONNX
call by its name, and gpulab.torch, the torch.compile backend and the ONNX loader hold exactly
its rows (none keeps a map of its own)."""

from __future__ import annotations

import numpy as np
import onnx.helper
import torch
from gpulab.functional.dtypes import FRONTEND_DTYPES, onnx_dtypes, torch_dtypes


def test_each_row_is_the_dtype_torch_and_onnx_name() -> None:
    for d in FRONTEND_DTYPES:
        assert getattr(torch, d.name).itemsize == d.itemsize, d.name
        assert np.dtype(onnx.helper.tensor_dtype_to_np_dtype(d.onnx)) == np.dtype(d.name), d
        assert d.held_as in ("float32", "int32", "bool"), d
        for alias in d.aliases:
            assert getattr(torch, alias) is getattr(torch, d.name), alias
    codes = [d.onnx for d in FRONTEND_DTYPES]
    assert len(set(codes)) == len(codes)


def test_gpulab_torch_reads_the_map() -> None:
    from gpulab.torch import _dtype

    want = {alias: d for d in torch_dtypes() for alias in (d.name, *d.aliases)}
    assert set(_dtype.DTYPES) == set(want)
    for alias, made in _dtype.DTYPES.items():
        row = want[alias]
        assert (made.name, made.device, made.itemsize) == (row.name, row.held_as, row.itemsize)
    assert _dtype.int64.device == "int32"  # held as int32: the protocol has no int64


def test_the_compile_backend_reads_the_map() -> None:
    from gpulab.torch_backend.table import DTYPES

    assert DTYPES == {getattr(torch, d.name): d.held_as for d in torch_dtypes()}


def test_the_onnx_loader_reads_the_map() -> None:
    from gpulab.onnx import ops_math, ops_shape, values

    assert values.ONNX_DTYPES == onnx_dtypes(hold=False)
    assert values.HELD_DTYPES == onnx_dtypes(hold=True)
    assert set(values.ONNX_DTYPES).isdisjoint(values.HELD_DTYPES)
    assert values.NARROW_INTS == {2, 3, 4, 5}  # UINT8, INT8, UINT16, INT16
    assert ops_math.ONNX_DTYPES is values.ONNX_DTYPES is ops_shape.ONNX_DTYPES
